package tokenizer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHFSplitRegexTimeout: a short Split pattern of nested repeats,
// (\p{L}+)+!, backtracks exponentially in regexp2 (26 letters took 13 s;
// 40 would take days), so `input text` of 40 letters hung. Each match is
// bounded (hfMatchTimeout, lowered to 50 ms here): Encode returns an
// error naming the pattern, the bound and the piece's size, without the
// text, well within 5 s; a released pattern's text still encodes.
func TestHFSplitRegexTimeout(t *testing.T) {
	defer func(d time.Duration) { hfMatchTimeout = d }(hfMatchTimeout)
	hfMatchTimeout = 50 * time.Millisecond
	old := `{"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false}`
	evil := `{"type": "Split", "pattern": {"Regex": "(\\p{L}+)+!"}, "behavior": "Isolated", "invert": false}`
	tk, err := LoadHF(writeSynthHF(t, old, evil))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ids []int32
		err error
	}
	done := make(chan result, 1)
	text := strings.Repeat("a", 40)
	go func() { ids, err := tk.Encode(text); done <- result{ids, err} }()
	select {
	case r := <-done:
		want := `regex "(\\p{L}+)+!": one match took more than 50ms on a piece of 40 bytes`
		if !errors.Is(r.err, ErrUnsupported) || !strings.Contains(r.err.Error(), want) {
			t.Fatalf("Encode: %v, %v; want ErrUnsupported and %q", r.ids, r.err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Encode of 40 letters still running after 5 s")
	}
	good, err := LoadHF(writeSynthHF(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Encode(strings.Repeat("ab c ", 2000)); err != nil {
		t.Fatalf("synthetic tokenizer: %v", err)
	}
}
