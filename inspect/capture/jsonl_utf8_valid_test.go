package capture

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"hsdb/engine/tokenizer"
)

// TestRowTextFaultAcceptsText: rows Python's json.loads and tokenizers take
// are never refused by the UTF-8 and surrogate check: raw UTF-8 of two,
// three and four bytes (é, 中, 😀), a surrogate pair in either hex case, an
// escaped backslash before "ud800" (the text \ud800, no escape), a
// backslash pair before a real pair, \u escapes of ordinary characters
// and \/ . Read as a --data file each text tokenizes as the same ids as
// the text written out (stories260K's run.c tokenizer, BOS first), so the
// raw and escaped spellings of one text agree.
func TestRowTextFaultAcceptsText(t *testing.T) {
	tok, err := tokenizer.LoadLlama2C("../../testdata/stories260K/tok512.bin")
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxPositions: 512, Vocab: tok.VocabSize()}
	for _, c := range []struct{ row, text string }{
		{`{"text": "café 中文 😀"}`, "café 中文 😀"},
		{`{"text": "\ud83d\ude00 and \uD83D\uDE00"}`, "😀 and 😀"},
		{`{"text": "a\\ud800b"}`, `a\ud800b`},
		{`{"text": "\\\ud83d\ude00"}`, `\😀`},
		{`{"text": "\u0063af\u00e9 \/ x"}`, "café / x"},
		{`{"id": "r\u00e9sum\u00e9 😀", "text": "ok"}`, "ok"},
	} {
		if err := RowTextFault([]byte(c.row)); err != nil {
			t.Errorf("%s: refused: %v", c.row, err)
			continue
		}
		p := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(p, []byte(c.row+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := OpenJSONL(p, tok, lim)
		if err != nil {
			t.Errorf("%s: %v", c.row, err)
			continue
		}
		r, err := in.Rows()
		if err != nil {
			t.Fatal(err)
		}
		_, s, err := r.Next()
		r.Close()
		if err != nil {
			t.Errorf("%s: %v", c.row, err)
			continue
		}
		enc, _ := tok.Encode(c.text)
		if want := append([]int32{tok.BOS()}, enc...); len(enc) == 0 || !slices.Equal(s.IDs, want) {
			t.Errorf("%s read as %v, want %v (BOS and the tokens of %q)", c.row, s.IDs, want, c.text)
		}
	}
}
