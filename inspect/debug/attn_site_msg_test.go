package debug

import (
	"strings"
	"testing"
)

// TestAttnProbsWrongSiteNamesSites: attn_probs at a site without attention
// names where it works for each family, as `help attn_probs` does: on
// DeepSeek (MLA) at its rotary_emb — which computes no attention there —
// the message must not send the user to rotary_emb alone; it names
// self_attn.attn and, for DeepSeek, self_attn.
func TestAttnProbsWrongSiteNamesSites(t *testing.T) {
	s := deepseekSession(t, 1, [][]int32{{1, 5, 9, 3}})
	if _, err := s.Break("layers.1.self_attn.rotary_emb", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	_, err := s.AttnProbs(0, 0)
	if err == nil || !strings.Contains(err.Error(), "layers.N.self_attn.attn") || !strings.Contains(err.Error(), "with MLA (DeepSeek, Kimi) also layers.N.self_attn") {
		t.Fatalf("attn_probs at DeepSeek's rotary_emb: %v", err)
	}
}
