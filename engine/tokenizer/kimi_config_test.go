package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

// TestKimiAddedTokensSameID: two added_tokens_decoder keys that spell the
// same id ("256" and "0256", or "+256") with different texts are refused
// naming both keys; before, which text id 256 got followed Go's map order,
// so the same files encoded "<|im_end|>" as id 256 in one run and as
// reserved-token text in the next.
func TestKimiAddedTokensSameID(t *testing.T) {
	for _, other := range []string{"0256", "+256"} {
		cfg := `{"added_tokens_decoder": {"256": {"content": "[BOS]"}, "` + other + `": {"content": "<|im_end|>"}, "257": {"content": "[EOS]"}}}`
		_, err := LoadKimi(kimiDir(t, byteRanks(), cfg))
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"`+other+`"`) || !strings.Contains(err.Error(), `"256"`) || !strings.Contains(err.Error(), "both id 256") {
			t.Errorf("keys 256 and %s: %v; want ErrFormat naming both keys and id 256", other, err)
		}
	}
	// One spelling each: loads, [BOS] 256 and [EOS] 257.
	tk, err := LoadKimi(kimiDir(t, byteRanks(), `{"added_tokens_decoder": {"256": {"content": "[BOS]"}, "257": {"content": "[EOS]"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if tk.BOS() != 256 || tk.EOS() != 257 {
		t.Errorf("BOS, EOS = %d, %d; want 256, 257", tk.BOS(), tk.EOS())
	}
}
