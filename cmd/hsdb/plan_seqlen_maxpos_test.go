package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanSeqLenWithinMaxPos: `hsdb plan` sized the KV cache for a
// sequence of --max-tokens 4096 tokens (or any --seq-len) on models whose
// max_position_embeddings is 64 (testdata/hf/deepseek_v3) or 512
// (stories260K), a sequence the engine refuses to run; the plan counted a
// cache no run allocates. The default now stops at max_position_embeddings
// and a longer --seq-len is refused, naming both. By hand for the
// DeepSeek-V3 fixture (MLA: kv_lora_rank 40 + qk_rope_head_dim 8 = 48
// values per token and layer, 4 layers, f32, the same on every rank): a
// slot of 64 rows (16 doubled until 64 fits) is 48 × 4 × 4 × 64 = 49152
// bytes; --seq-len 33 also takes a 64-row slot.
func TestPlanSeqLenWithinMaxPos(t *testing.T) {
	for _, c := range []struct {
		args []string
		kv   int64
	}{
		{nil, 48 * 4 * 4 * 64},
		{[]string{"--seq-len", "33"}, 48 * 4 * 4 * 64},
		{[]string{"--seq-len", "64", "--seqs", "3"}, 3 * 48 * 4 * 4 * 64},
	} {
		args := append([]string{"plan", "--model", "../../testdata/hf/deepseek_v3", "--tp", "2", "--device", "cpu", "--json"}, c.args...)
		out, errs, code := runHsdb(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		var p struct {
			Ranks []struct {
				KV int64 `json:"kv_bytes"`
			} `json:"ranks"`
			SeqLen int `json:"seq_len"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %v: %s", c.args, err, out)
		}
		if len(p.Ranks) != 2 || p.Ranks[0].KV != c.kv || p.Ranks[1].KV != c.kv || p.SeqLen > 64 {
			t.Errorf("%v: %s; want kv_bytes %d per rank, seq_len at most 64", c.args, out, c.kv)
		}
	}
	// A flag value the model cannot take is a usage error (exit 2, as
	// --seq-len -1 is); it exited 1, as a model that fails to load, with
	// --pp 1 and with pipeline stages alike.
	for _, pp := range []string{"1", "2"} {
		_, errs, code := runHsdb(t, "plan", "--model", "../../testdata/hf/deepseek_v3", "--seq-len", "65", "--pp", pp)
		if code != 2 || !strings.Contains(errs, "--seq-len 65 is more than max_position_embeddings 64") || strings.Count(errs, "\n") != 1 {
			t.Errorf("--seq-len 65 --pp %s: exit %d, stderr %q; want exit 2 and one line", pp, code, errs)
		}
	}
}
