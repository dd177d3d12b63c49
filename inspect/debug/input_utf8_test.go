package debug

import (
	"strings"
	"testing"
)

// TestInputFileRefusesNonText: the debugger's `input file` reads rows as
// `hsdb capture --data` does, so a row that names no Unicode text (a 0xFF
// byte, half a surrogate pair) is refused there too; it was decoded to
// U+FFFD and tokenized as another text.
func TestInputFileRefusesNonText(t *testing.T) {
	for line, want := range map[string]string{
		"{\"text\": \"a\xffb\"}":                 "byte 11 (0xff) is not UTF-8",
		`{"text": "a\ud800b"}`:                   `lone surrogate \ud800 at byte 11`,
		"{\"id\": \"\xfe\", \"input_ids\": [1]}": "byte 8 (0xfe) is not UTF-8",
	} {
		_, _, _, err := parseJSONLRecord([]byte(line))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", line, err, want)
		}
	}
	if _, text, _, err := parseJSONLRecord([]byte(`{"text": "a\ud83d\ude00b"}`)); err != nil || text == nil || *text != "a\U0001F600b" {
		t.Errorf("a surrogate pair: %v, %v; want the text a😀b", text, err)
	}
}
