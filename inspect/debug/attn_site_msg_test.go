package debug

import (
	"strings"
	"testing"

	"hsdb/engine"
)

// TestAttnProbsWrongSiteNamesSites: attn_probs at a site without attention
// names where it works for each family, as `help attn_probs` does: on
// DeepSeek (MLA) at its rotary_emb — which computes no attention there —
// the message must not send the user to rotary_emb alone; it names
// self_attn.attn and, for DeepSeek, self_attn.
func TestAttnProbsWrongSiteNamesSites(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/deepseek_v3", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := New(e)
	t.Cleanup(s.Kill)
	if err := s.SetBatch([][]int32{{1, 5, 9, 3}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.1.self_attn.rotary_emb", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	_, err = s.AttnProbs(0, 0)
	if err == nil || !strings.Contains(err.Error(), "layers.N.self_attn.attn") || !strings.Contains(err.Error(), "with MLA (DeepSeek, Kimi) also layers.N.self_attn") {
		t.Fatalf("attn_probs at DeepSeek's rotary_emb: %v", err)
	}
}
