package engine_test

import (
	"errors"
	"os"
	"testing"

	"hsdb/engine"
	"hsdb/engine/plan"
)

// FuzzPlanConfig: any config.json bytes give a plan or one error, never a
// panic, a hang or an allocation that grows with a size field (the bounds
// of engine/model and the checked arithmetic of engine/plan). Seeds: the
// released DeepSeek-V3 and Kimi-K2.5 configs and the fixtures' configs.
func FuzzPlanConfig(f *testing.F) {
	for _, p := range []string{"../testdata/configs/deepseek-v3/config.json", "../testdata/configs/kimi-k2.5/config.json",
		"../testdata/hf/llama/config.json", "../testdata/hf/deepseek_v3/config.json", "../testdata/hf/qwen3/config.json", "../testdata/hf/deepseek_v2/config.json"} {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, cfg []byte, tp uint8, ep bool) {
		world := 1 << (tp % 4) // 1, 2, 4 or 8 ranks
		p, err := engine.PlanConfig(cfg, nil, engine.PlanOptions{TP: world, EP: ep, Tokens: 4096, DeviceBytes: 141 << 30})
		if err != nil {
			if errors.Is(err, plan.ErrOverflow) {
				return // a plan past int64 bytes, refused
			}
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if len(p.Ranks) != world {
			t.Fatalf("%d ranks for --tp %d", len(p.Ranks), world)
		}
		for _, r := range p.Ranks {
			if r.Weights < 0 || r.KV < 0 || r.Activations < 0 || r.Total < r.Weights {
				t.Fatalf("rank %d: %+v", r.Rank, r)
			}
		}
	})
}
