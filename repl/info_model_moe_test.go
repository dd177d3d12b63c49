package repl

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
)

// TestInfoModelMoE: on DeepSeek-V3 and Kimi `info model` gave hidden,
// heads and intermediate_size (the dense layers' MLP) but nothing of the
// routed experts: how many, how many per token, how wide, which layers
// route — what decides whether --ep splits evenly and which captured
// layers hold MoE outputs. It now has an experts line and --json a "moe"
// object; the expected values are read from the fixtures' config.json
// (Kimi-K2.5's under text_config) and the MoE layers derived from
// first_k_dense_replace (moe_layer_freq 1).
func TestInfoModelMoE(t *testing.T) {
	for _, c := range []struct{ dir, sub string }{{"../testdata/hf/deepseek_v3", ""}, {"../testdata/hf/kimi_k25", "text_config"}} {
		raw, err := os.ReadFile(c.dir + "/config.json")
		if err != nil {
			t.Fatal(err)
		}
		if c.sub != "" {
			var outer map[string]json.RawMessage
			if err := json.Unmarshal(raw, &outer); err != nil {
				t.Fatal(err)
			}
			raw = outer[c.sub]
		}
		var cfg struct {
			Layers  int `json:"num_hidden_layers"`
			Experts int `json:"n_routed_experts"`
			TopK    int `json:"num_experts_per_tok"`
			Inter   int `json:"moe_intermediate_size"`
			Shared  int `json:"n_shared_experts"`
			FirstK  int `json:"first_k_dense_replace"`
			Freq    int `json:"moe_layer_freq"`
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Experts == 0 || cfg.FirstK == 0 || cfg.Freq > 1 {
			t.Fatalf("%s: fixture changed: %+v", c.dir, cfg)
		}
		f := openFake(t, c.dir, engine.Options{TP: 2})
		want := fmt.Sprintf("experts            %d routed of moe_intermediate_size %d, %d per token (num_experts_per_tok), shared %d wide; in layers %d-%d (the others dense, intermediate_size)\n",
			cfg.Experts, cfg.Inter, cfg.TopK, cfg.Inter*cfg.Shared, cfg.FirstK, cfg.Layers-1)
		f.AssertExec("info model", want)
		moe, _ := f.jsonExec("info model")[0]["result"].(map[string]any)["moe"].(map[string]any)
		if moe == nil || moe["n_routed_experts"] != float64(cfg.Experts) || moe["num_experts_per_tok"] != float64(cfg.TopK) ||
			moe["moe_intermediate_size"] != float64(cfg.Inter) || fmt.Sprint(moe["moe_layers"]) != fmt.Sprint(layerRange(cfg.FirstK, cfg.Layers)) {
			t.Errorf("%s --json moe: %v", c.dir, moe)
		}
	}
	f := openFake(t, "../testdata/hf/llama", engine.Options{}) // dense: no experts line, no "moe"
	if out := f.Exec("info model"); strings.Contains(out, "experts") {
		t.Errorf("llama info model has an experts line:\n%s", out)
	}
	if _, ok := f.jsonExec("info model")[0]["result"].(map[string]any)["moe"]; ok {
		t.Errorf("llama --json has moe")
	}
}

// layerRange is [a, b) as float64s, as JSON decodes a list of numbers.
func layerRange(a, b int) []any {
	var out []any
	for i := a; i < b; i++ {
		out = append(out, float64(i))
	}
	return out
}

// TestInfoModelMoEDenseLoad: with --load-layers 0-0 on the DeepSeek-V3
// fixture (first_k_dense_replace 1: layer 0 is dense) no loaded layer
// routes, yet the experts line gave the sizes alone, reading as experts
// loaded; it now says none of the loaded layers routes (--json: an empty
// moe_layers).
func TestInfoModelMoEDenseLoad(t *testing.T) {
	f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 1, Layers: &model.LayerRange{First: 0, Last: 0}})
	out := f.Exec("info model")
	if !strings.Contains(out, "shared 36 wide; none of the loaded layers routes (they are dense, intermediate_size)\n") {
		t.Errorf("info model at --load-layers 0-0:\n%s", out)
	}
	moe, _ := f.jsonExec("info model")[0]["result"].(map[string]any)["moe"].(map[string]any)
	if l, ok := moe["moe_layers"].([]any); !ok || len(l) != 0 {
		t.Errorf("--json moe_layers: %v, want []", moe["moe_layers"])
	}
}
