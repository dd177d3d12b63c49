package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanNotesStepPastCache: since the KV cache's default sequence stops
// at max_position_embeddings, the default plan of stories260K (512
// positions) counted activations for a 4096-token step beside one cache
// slot of 512 rows without a word, though such a step is at least
// 4096/512 = 8 sequences, each needing its slot. The plan now notes it
// and the flags that make the two agree; --seqs 8, or a step of 512 tokens,
// plans no such step. The DeepSeek-V3 fixture (64 positions) at --seqs 3:
// ceil(4096/64) = 64 sequences.
func TestPlanNotesStepPastCache(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" no note
	}{
		{nil, "a step of 4096 tokens (--max-tokens) is at least 8 sequences of at most 512 tokens (max_position_embeddings), but the KV cache is counted for 1 (--seqs): --seqs 8 counts the cache such a step needs, or --max-tokens 512 plans a step the cache holds"},
		{[]string{"--seqs", "8"}, ""},
		{[]string{"--max-tokens", "512"}, ""},
		{[]string{"--max-tokens", "1000", "--seq-len", "100", "--seqs", "2"}, "a step of 1000 tokens (--max-tokens) is at least 10 sequences of at most 100 tokens (--seq-len), but the KV cache is counted for 2 (--seqs): --seqs 10 counts"},
		{[]string{"--model", "../../testdata/hf/deepseek_v3", "--seqs", "3"}, "is at least 64 sequences of at most 64 tokens (max_position_embeddings), but the KV cache is counted for 3 (--seqs): --seqs 64 counts the cache such a step needs, or --max-tokens 192 plans"},
	} {
		out, errs, code := runHsdb(t, append([]string{"plan", "--json"}, c.args...)...)
		var p struct {
			Notes []string `json:"notes"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil || code != 0 {
			t.Fatalf("%v: exit %d, %v: %s %s", c.args, code, err, out, errs)
		}
		got := strings.Join(p.Notes, "\n")
		if c.want == "" && strings.Contains(got, "KV cache is counted for") || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("plan %v: notes %q, want %q", c.args, p.Notes, c.want)
		}
	}
}
