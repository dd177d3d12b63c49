package engine

import (
	"strings"
	"testing"
)

// TestPlanSeqLenPastMaxPosition: `hsdb plan` on the embedded stories260K
// said "1 sequence of up to 4096 tokens" (--max-tokens' default) and
// counted its KV cache without a word, although the model holds at most
// 512 positions (llama2.c's stories260K was trained with max_seq_len 512;
// its config says max_position_embeddings 512) and hsdb capture refuses a
// longer row. The plan now says so and names --seq-len 512; at 512, and
// for the Llama fixture (max_position_embeddings 64) at 64, it says
// nothing of it.
func TestPlanSeqLenPastMaxPosition(t *testing.T) {
	note := func(p *DirPlan) string {
		for _, n := range p.Notes {
			if strings.Contains(n, "max_position_embeddings") {
				return n
			}
		}
		return ""
	}
	for _, c := range []struct {
		path        string
		seqLen, tok int
		want        string // "" when no note is wanted
	}{
		{"", 0, 4096, "a sequence of 4096 tokens, more than max_position_embeddings 512, the most one sequence of this model holds (hsdb capture refuses a longer --data row): --seq-len 512 plans the longest it runs"},
		{"", 513, 4096, "a sequence of 513 tokens, more than max_position_embeddings 512"},
		{"", 512, 4096, ""},
		{"../testdata/hf/llama", 65, 4096, "more than max_position_embeddings 64"},
		{"../testdata/hf/llama", 64, 4096, ""},
	} {
		p, err := PlanModel(c.path, PlanOptions{TP: 1, Tokens: c.tok, SeqLen: c.seqLen, Seqs: 1, DeviceBytes: 1 << 40})
		if err != nil {
			t.Fatalf("%q --seq-len %d: %v", c.path, c.seqLen, err)
		}
		got := note(p)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%q --seq-len %d: note %q, want %q", c.path, c.seqLen, got, c.want)
		}
	}
}
