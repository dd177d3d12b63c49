package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// TestHFSplitRegexBound: a Split pattern over 4096 bytes (here 10,000
// nested groups, 20,001 bytes, which loaded and then took seconds per
// 13 KB of text) is refused at load naming its size and the bound; a
// pattern of exactly 4096 bytes (a 4094-byte literal in a group) loads.
func TestHFSplitRegexBound(t *testing.T) {
	split := func(re string) string {
		return `{"type": "Split", "pattern": {"Regex": "` + re + `"}, "behavior": "Isolated", "invert": false}`
	}
	old := `{"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false}`
	nested := strings.Repeat("(", 10000) + "a" + strings.Repeat(")", 10000)
	_, err := LoadHF(writeSynthHF(t, old, split(nested)))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "a pattern of 20001 bytes, more than the 4096 hsdb compiles") {
		t.Errorf("20001-byte pattern: %v", err)
	}
	edge := "(" + strings.Repeat("q", 4094) + ")"
	if _, err := LoadHF(writeSynthHF(t, old, split(edge))); err != nil {
		t.Errorf("4096-byte pattern: %v", err)
	}
}
