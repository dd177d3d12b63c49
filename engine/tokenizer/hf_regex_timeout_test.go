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

// TestHFEncodeMaxBeforePreTokenizing: EncodeMax refuses a segment that
// cannot fit before the pre-tokenizer runs on it: its n bytes become words
// of n characters or more, and no vocabulary token of the synthetic
// tokenizer is longer than 6 (by hand), so 40 letters take at least 7
// ids. The Split regex (\p{L}+)+! would time out on them (as Encode
// shows); under a bound of 5 the refusal comes first. 15 MB of "a1! \n"
// took 13 s to split into words with Qwen3's tokenizer before the count
// refused it. A pre-tokenizer that may drop text (a Split with behavior
// Removed) gives no such bound, and the regex runs.
func TestHFEncodeMaxBeforePreTokenizing(t *testing.T) {
	defer func(d time.Duration) { hfMatchTimeout = d }(hfMatchTimeout)
	hfMatchTimeout = 50 * time.Millisecond
	old := `{"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false}`
	evil := `{"type": "Split", "pattern": {"Regex": "(\\p{L}+)+!"}, "behavior": "Isolated", "invert": false}`
	text := strings.Repeat("a", 40)
	tk, err := LoadHF(writeSynthHF(t, old, evil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Encode(text); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Encode: %v; want the regex's timeout", err)
	}
	if _, err := tk.EncodeMax(text, 5); !errors.Is(err, ErrTooManyTokens) {
		t.Errorf("EncodeMax under 5: %v; want ErrTooManyTokens before the regex runs", err)
	}
	removed := strings.Replace(evil, `"Isolated"`, `"Removed"`, 1)
	tk, err = LoadHF(writeSynthHF(t, old, removed))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.EncodeMax(text, 5); !errors.Is(err, ErrUnsupported) {
		t.Errorf("EncodeMax under 5 with a Removed split: %v; want the regex's timeout (no bound from the length)", err)
	}
}
