package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TestTreeIsWhatEveryRankHolds: for every HF fixture and split, each rank's
// device holds exactly the shards the module tree gives it (the sum over
// parameters of RankShape(rank) × 4 bytes, the fixtures being float32 and
// fp8 weights dequantized to float32), so the tree and the loading, which
// both come from one build function, agree on every parameter's per-rank
// range, vocabulary padding and replicated kv heads included. (DeepSeek-V3's
// e_score_correction_bias is the one parameter the router keeps on the
// host.)
func TestTreeIsWhatEveryRankHolds(t *testing.T) {
	for _, name := range []string{"llama", "llama3", "mistral", "qwen2", "qwen3", "deepseek_v3", "deepseek_v2", "deepseek_v3_fp8"} {
		f := loadFixture(t, name)
		for _, o := range []engine.Options{{TP: 1}, {TP: 2}, {TP: 4}, {TP: 2, EP: true}} {
			e, err := engine.LoadSource(f.dir, f.config, &model.MapSource{Name: f.dir, Tensors: f.weights}, o)
			if err != nil {
				if o.EP && name[:4] != "deep" {
					continue // only the DeepSeek fixtures have routed experts
				}
				t.Fatalf("%s %s: %v", name, optName(o), err)
			}
			for r, got := range e.MemoryInUse() {
				var want int64
				for _, p := range e.Tree.Params() {
					if strings.HasSuffix(p.Name, ".e_score_correction_bias") {
						continue // the router keeps it on the host
					}
					want += int64(tensor.Numel(p.RankShape(r))) * 4
				}
				if got != want || want == 0 {
					t.Errorf("%s %s rank %d holds %d bytes, the tree gives it %d", name, optName(o), r, got, want)
				}
			}
		}
	}
}
