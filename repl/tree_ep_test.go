package repl

import (
	"strings"
	"testing"

	"hsdb/engine"
)

// TestTreeExpertParallel: `tree` at --ep said of each routed expert's
// weight "split dim 0: r0 [36, 96] r1 [0, 96]", a split that is none: vLLM's
// expert parallelism places each expert whole on one rank. DeepSeek-V3's
// fixture (8 routed experts, moe_intermediate_size 36, hidden 96) at tp 2:
// by vLLM's linear placement rank r holds experts [4r, 4r+4), so expert 5
// is whole on rank 1. Without --ep the experts stay split on dim 0. The
// experts' weights of one shape and split print as one line each (at
// Kimi-K2's 384 experts, `tree` printed 1152 lines per MoE layer).
func TestTreeExpertParallel(t *testing.T) {
	f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 2, EP: true})
	out := f.AssertExec("tree layers.1.mlp.experts",
		"· {4-7}.gate_proj.weight [36, 96] (4 weights)  whole on rank 1, none on the others (expert parallel)\n",
		"· {0-3}.down_proj.weight [96, 36] (4 weights)  whole on rank 0, none on the others (expert parallel)\n")
	if strings.Contains(out, "split dim") {
		t.Errorf("--ep tree still says split:\n%s", out)
	}
	f = openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 2})
	f.AssertExec("tree layers.1.mlp.experts", "· {0-7}.gate_proj.weight [36, 96] (8 weights)  split dim 0: r0 [18, 96] r1 [18, 96]\n")
}
