package debug

import (
	"strings"
	"testing"

	"hsdb/engine/tokenizer"
)

// TestInputTextBoundedBeforeEncode: `input text` of more bytes than
// max_position_embeddings tokens hold (stories260K: 512 × 1024 = 524288;
// 524289 here) is refused from its length, naming the bound; it was
// tokenized first (a 15 MB text took 1.2 GB and 4.3 s before the count
// refused it). The tokenizer is wrapped to count Encode's calls: none for
// the refused text, one for a text within the bound.
func TestInputTextBoundedBeforeEncode(t *testing.T) {
	s := newSession(t, 1)
	tok, err := tokenizer.LoadLlama2C("../../testdata/stories260K/tok512.bin")
	if err != nil {
		t.Fatal(err)
	}
	s.Tok = countingTok{tok, new(int)}
	_, err = s.Encode(strings.Repeat("a", 512*1024+1))
	want := "input text: text of 524289 bytes, more than max_position_embeddings 512 tokens hold (524288 bytes at most: 1024 per token, 8 times the longest token of released vocabularies)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if n := *s.Tok.(countingTok).calls; n != 0 {
		t.Fatalf("Encode called %d times for the refused text", n)
	}
	if _, err := s.Encode("Once upon a time"); err != nil || *s.Tok.(countingTok).calls != 1 {
		t.Fatalf("a short text: %v (Encode called %d times)", err, *s.Tok.(countingTok).calls)
	}
}

// countingTok counts Encode calls and otherwise is the Tokenizer it wraps.
type countingTok struct {
	Tokenizer
	calls *int
}

func (c countingTok) Encode(text string) ([]int32, error) {
	*c.calls++
	return c.Tokenizer.Encode(text)
}
