package capture

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/tokenizer"
)

// TestJSONLRowOneObjectPerLine: a --data line holding two rows (`{...}{...}`)
// or a stray byte after its object is refused naming the file, line and
// what follows; the second row was dropped without a word (1 sequence
// captured of 2). A row with both "input_ids" and "text" is refused (the
// text was ignored). Messages by hand.
func TestJSONLRowOneObjectPerLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ line, want string }{
		{`{"input_ids": [1, 2]}{"input_ids": [3, 4]}`, `:1: "{\"input_ids\": [3, 4]}" follows the row's JSON object at byte 21: one object per line`},
		{`{"input_ids": [1, 2]} }`, `:1: "}" follows the row's JSON object at byte 21: one object per line`},
		{`{"input_ids": [1, 2], "text": "hi"}`, `:1: the row has both "input_ids" and "text": give one`},
	} {
		p := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(p, []byte(c.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenJSONL(p, nil, Limits{Vocab: 10})
		if err == nil || err.Error() != p+c.want {
			t.Errorf("%s: %v, want %q", c.line, err, p+c.want)
		}
	}
	// Trailing blanks are not a second value.
	p := filepath.Join(dir, "ok.jsonl")
	if err := os.WriteFile(p, []byte("{\"input_ids\": [1, 2]} \t\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if in, err := OpenJSONL(p, nil, Limits{Vocab: 10}); err != nil || in.Len() != 1 {
		t.Errorf("trailing blanks: %v", err)
	}
}

// TestJSONLRowIDsCountedFirst: a row of more input_ids than
// max_position_embeddings is refused from the count of its elements
// (2,000,001 here, by construction) naming the file, line and bound, and
// a loss_mask of more values than that bound is refused from its count,
// before any []int64 is made; arrays nested or holding strings with commas
// count as their top-level elements (json's own error then names them).
func TestJSONLRowIDsCountedFirst(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "long.jsonl")
	if err := os.WriteFile(p, []byte(`{"input_ids": [`+strings.Repeat("1, ", 2_000_000)+"1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenJSONL(p, nil, Limits{MaxPositions: 512, Vocab: 10})
	if want := p + ":1 (sequence 0, id \"0\"): 2000001 tokens, more than max_position_embeddings 512"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	// loss_mask is counted the same way (its length must be input_ids').
	if err := os.WriteFile(p, []byte(`{"input_ids": [1, 2], "loss_mask": [`+strings.Repeat("1, ", 2_000_000)+"1]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenJSONL(p, nil, Limits{MaxPositions: 512, Vocab: 10})
	if want := p + ":1: loss_mask has 2000001 values for 2 input_ids"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	for _, c := range []struct {
		raw string
		n   int
	}{{`[]`, 0}, {`[ ]`, 0}, {`[1]`, 1}, {`[1,2 , 3]`, 3}, {`["a,b", [1,2], {"x":[3,4]}]`, 3}, {`"1,2"`, 0}, {`{"a":1,"b":2}`, 0}, {`["\"],["]`, 1}} {
		if got := countElements([]byte(c.raw)); got != c.n {
			t.Errorf("countElements(%s) = %d, want %d", c.raw, got, c.n)
		}
	}
	// Within the bound the ids are read as before.
	if err := os.WriteFile(p, []byte(`{"input_ids": [3, 1, 2]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := readJSONL(p, nil, Limits{MaxPositions: 3, Vocab: 10})
	if err != nil || len(in.Seqs) != 1 || len(in.Seqs[0].IDs) != 3 || in.Seqs[0].IDs[0] != 3 || in.Seqs[0].IDs[2] != 2 {
		t.Fatalf("3 ids at max 3: %+v, %v", in, err)
	}
}

// encodeForbidden is a tokenizer whose Encode fails the test: a row it
// sees was not refused before tokenizing.
type encodeForbidden struct{ t *testing.T }

func (e encodeForbidden) Encode(text string) ([]int32, error) {
	e.t.Fatalf("Encode called with %d bytes", len(text))
	return nil, nil
}
func (encodeForbidden) Decode([]int32) string         { return "" }
func (encodeForbidden) DecodePiece(_, _ int32) string { return "" }
func (encodeForbidden) VocabSize() int                { return 10 }
func (encodeForbidden) BOS() int32                    { return 1 }
func (encodeForbidden) EOS() int32                    { return 2 }
func (encodeForbidden) Name() string                  { return "encode-forbidden" }

// TestJSONLTextBoundedBeforeEncode: a text row longer than
// max_position_embeddings × MaxTextBytesPerToken bytes (8 × 1024 + 1 = 8193
// at 8 positions, by hand) is refused from its length, naming the file,
// line, sequence and bound, without tokenizing it (tokenizers take 55-90
// bytes of memory per byte of text).
func TestJSONLTextBoundedBeforeEncode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "text.jsonl")
	if err := os.WriteFile(p, []byte(`{"text": "`+strings.Repeat("a", 8193)+`"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenJSONL(p, encodeForbidden{t}, Limits{MaxPositions: 8, Vocab: 10})
	want := p + `:1 (sequence 0, id "0"): text of 8193 bytes, more than max_position_embeddings 8 tokens hold (8192 bytes at most: 1024 per token, 8 times the longest token of released vocabularies)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestJSONLTextStopsAtMaxPositions: a --data text row under the byte bound
// but over max_position_embeddings tokens is refused, with a tokenizer
// that can stop early, once its ids pass the bound (here 8 positions and
// a tiktoken tokenizer, which starts a text with no BOS as Kimi's does,
// tokenizer.TextBOS: 8 ids; 20 bytes of single-byte tokens make 20), naming
// the file, line, sequence and bound and saying encoding stopped there;
// before, the whole row was tokenized first (200 MB of spaces: 3.5
// minutes). A row within the bound still reads.
func TestJSONLTextStopsAtMaxPositions(t *testing.T) {
	var ranks strings.Builder
	for b := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	tk, err := tokenizer.NewTiktoken("bytes", []byte(ranks.String()), tokenizer.PatternCL100K, map[string]int32{"<s>": 256}, 256, -1)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "text.jsonl")
	if err := os.WriteFile(p, []byte(`{"text": "abcdefg"}`+"\n"+`{"text": "`+strings.Repeat("a", 20)+`"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenJSONL(p, tk, Limits{MaxPositions: 8, Vocab: 300})
	want := p + `:2 (sequence 1, id "1"): more than max_position_embeddings 8 tokens (tiktoken:bytes: too many tokens: more than 8 in a text of 20 bytes (encoding stopped there))`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
