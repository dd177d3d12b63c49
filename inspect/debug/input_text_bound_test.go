package debug

import (
	"encoding/base64"
	"fmt"
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

// TestInputTextStopsAtMaxPositions: `input text` with a tokenizer that can
// stop early (tiktoken, HF) is refused once its ids pass
// max_position_embeddings (stories260K: 512; a tokenizer of single bytes
// and no BOS makes 600 bytes 600 ids, by hand), saying encoding stopped
// there: 200 MB of spaces took 3.5 minutes to tokenize before the count
// refused them. A tokenizer error quotes the first 64 bytes of the text
// and its size, not a 200 kB text whole.
func TestInputTextStopsAtMaxPositions(t *testing.T) {
	s := newSession(t, 1)
	var ranks strings.Builder
	for b := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	tk, err := tokenizer.NewTiktoken("bytes", []byte(ranks.String()), tokenizer.PatternCL100K, nil, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	s.Tok = tk
	if ids, err := s.Encode(strings.Repeat("a", 512)); err != nil || len(ids) != 512 {
		t.Fatalf("512 bytes: %d ids, %v; want 512", len(ids), err)
	}
	_, err = s.Encode(strings.Repeat("a", 600))
	want := "input text: more than max_position_embeddings 512 tokens (tiktoken:bytes: too many tokens: more than 512 in a text of 600 bytes (encoding stopped there))"
	if err == nil || err.Error() != want {
		t.Fatalf("600 bytes: %v\nwant %s", err, want)
	}
	// 1 + 2·100000 bytes; its first 64 cut back to the last whole
	// character: \xff and 31 é.
	_, err = s.Encode("\xff" + strings.Repeat("é", 100000))
	want = `input text "\xff` + strings.Repeat("é", 31) + `"... (200001 bytes): tiktoken:bytes: text is not valid UTF-8`
	if err == nil || err.Error() != want {
		t.Fatalf("invalid UTF-8: %.300v\nwant %s", err, want)
	}
}
