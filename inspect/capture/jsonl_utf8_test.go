package capture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tokenizer"
)

// TestOpenJSONLRefusesNonText: a --data row whose bytes are not UTF-8 (a
// 0xFF byte, a UTF-16 file) or whose text holds half a surrogate pair
// ("\ud800") was read with each turned into U+FFFD by encoding/json and
// tokenized as that other text (stories260K's tokenizer: 6 ids for
// "a\xffb"); Python's json.loads over the file refuses the bytes and its
// tokenizers the surrogate, so no reference sequence exists. Each is now
// refused naming the file, the line and the byte. A pair ("\ud83d\ude00")
// is one character and still reads as its tokens.
func TestOpenJSONLRefusesNonText(t *testing.T) {
	tok, err := tokenizer.LoadLlama2C("../../testdata/stories260K/tok512.bin")
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxPositions: 512, Vocab: tok.VocabSize()}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, c := range map[string]struct{ body, want string }{
		"latin1.jsonl":    {"{\"input_ids\": [1]}\n{\"text\": \"caf\xe9\"}\n", `latin1.jsonl:2: byte 13 (0xe9) is not UTF-8`},
		"ff.jsonl":        {"{\"text\": \"a\xffb\"}\n", `ff.jsonl:1: byte 11 (0xff) is not UTF-8`},
		"utf16.jsonl":     {"\xff\xfe{\x00\"\x00", `utf16.jsonl:1: byte 0 (0xff) is not UTF-8`},
		"id.jsonl":        {"{\"id\": \"s\xff\", \"input_ids\": [1]}\n", `id.jsonl:1: byte 9 (0xff) is not UTF-8`},
		"surrogate.jsonl": {`{"text": "a\ud800b"}` + "\n", `surrogate.jsonl:1: lone surrogate \ud800 at byte 11`},
		"low.jsonl":       {`{"text": "\udc00"}` + "\n", `low.jsonl:1: lone surrogate \udc00`},
	} {
		_, err := OpenJSONL(write(name, c.body), tok, lim)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	in, err := OpenJSONL(write("pair.jsonl", `{"text": "a\ud83d\ude00b"}`+"\n"), tok, lim)
	if err != nil {
		t.Fatalf("a surrogate pair: %v", err)
	}
	r, err := in.Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, s, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := tok.Encode("a\U0001F600b")
	want := append([]int32{tok.BOS()}, enc...) // run.c's encode(text, bos=1, eos=0)
	if len(enc) == 0 || !slices.Equal(s.IDs, want) {
		t.Errorf("a\\ud83d\\ude00b read as %v, want %v (BOS and the tokens of a😀b)", s.IDs, want)
	}
}
