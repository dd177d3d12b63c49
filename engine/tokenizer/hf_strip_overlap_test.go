package tokenizer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestHFAddedInsideRStrip: an lstrip added token matched inside the
// whitespace an earlier rstrip token took. HF's find_matches moves its
// start to the earlier token's end (start_offset): with the span then
// empty, the token is dropped with its id (PreTokenizedString::split
// keeps no empty split); with start past stop, split_with_indices panics
// ("AddedVocabulary bad split"). hsdb emitted the id of the empty span
// and panicked on the inverted one (slice bounds out of range [3:2]).
// Here "q" (id 101; in no model.vocab entry) has rstrip and " " (id 102) lstrip; the ids below
// follow HF's algorithm by hand.
func TestHFAddedInsideRStrip(t *testing.T) {
	tk, err := LoadHF(writeSynthHF(t,
		`{"id": 102, "content": "cat", "single_word": true, "lstrip": false`, `{"id": 102, "content": " ", "single_word": false, "lstrip": true`,
		`{"id": 101, "content": "<Y>", "single_word": false, "lstrip": false, "rstrip": true`, `{"id": 101, "content": "q", "single_word": false, "lstrip": false, "rstrip": true`))
	if err != nil {
		t.Fatal(err)
	}
	// "q" takes [0,2); " " at [1,2) becomes the empty span [2,2): dropped.
	// "y" is model.vocab's 10.
	if got, err := tk.Encode("q y"); err != nil || !slices.Equal(got, []int32{101, 10}) {
		t.Errorf(`Encode("q y") = %v, %v; want [101 10]`, got, err)
	}
	// "q" takes [0,3); " " at [1,2) becomes [3,2): HF fails, so does hsdb.
	_, err = tk.Encode("q  y")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `added token " " (id 102, lstrip) at byte 1`) ||
		!strings.Contains(err.Error(), `added token "q" (id 101, rstrip)`) {
		t.Errorf(`Encode("q  y") error %v; want ErrUnsupported naming both tokens and byte 1`, err)
	}
	// A space the rstrip did not take is still matched: "q" takes
	// [0,1) with nothing after it, " " at [2,3) lstrips over nothing.
	if got, err := tk.Encode("qa y"); err != nil || !slices.Equal(got, []int32{101, 0, 102, 10}) {
		t.Errorf(`Encode("qa y") = %v, %v; want [101 0 102 10]`, got, err)
	}
}
