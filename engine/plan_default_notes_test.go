package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/model"
)

// TestPlanDefaultNotes: a config.json that leaves out a size takes its
// HF config class's default, as transformers' from_pretrained fills it
// (LlamaConfig's intermediate_size is Llama-2-7B's 11008), and the plan
// says so in its notes; with the checkpoint's headers at hand, a tensor
// whose shape disagrees with that default is refused naming the default
// (testdata/hf/llama's mlp.gate_proj is [160, 96]: the config without
// intermediate_size implies [11008, 96]), by the plan and the load alike.
func TestPlanDefaultNotes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "hf", "llama", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(raw), `"intermediate_size": 160,`, "", 1)
	if cfg == string(raw) {
		t.Fatal("testdata/hf/llama/config.json has no intermediate_size 160 to leave out")
	}
	p, err := PlanConfig([]byte(cfg), nil, PlanOptions{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	const note = "intermediate_size 11008 is LlamaConfig's default (config.json has none)"
	if !slices.Contains(p.Notes, note) {
		t.Errorf("notes %q, want one %q", p.Notes, note)
	}
	full, err := PlanConfig(raw, nil, PlanOptions{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range full.Notes {
		if strings.Contains(n, "default") {
			t.Errorf("a config naming every size: note %q", n)
		}
	}
	dir := hostileCopy(t, "llama")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "intermediate_size 11008 (LlamaConfig's default: config.json has none) but tensor model.layers.0.mlp.gate_proj.weight is [160, 96] in the checkpoint (the config implies [11008, 96])"
	if _, err := PlanDir(dir, PlanOptions{TP: 1}); !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), want) {
		t.Errorf("plan: err = %v, want %q", err, want)
	}
	if _, err := Open(dir, Options{TP: 1, Device: "cpu"}); !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), want) {
		t.Errorf("load: err = %v, want %q", err, want)
	}
}

// TestPlanDefaultLayerCount: testdata/hf/llama holds 3 decoder layers; its
// config.json without num_hidden_layers takes LlamaConfig's 32, which no
// tensor's shape shows: the plan and the load name the default and the
// checkpoint's count (before, the plan named tensor
// model.layers.3.input_layernorm.weight missing).
func TestPlanDefaultLayerCount(t *testing.T) {
	dir := hostileCopy(t, "llama")
	hostileJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) { delete(m, "num_hidden_layers") })
	const want = "num_hidden_layers 32 (LlamaConfig's default: config.json has none) but the checkpoint holds 3 decoder layers (layers 0-2)"
	if _, err := PlanDir(dir, PlanOptions{TP: 1}); !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), want) {
		t.Errorf("plan: err = %v, want %q", err, want)
	}
	if _, err := Open(dir, Options{TP: 1, Device: "cpu"}); !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), want) {
		t.Errorf("load: err = %v, want %q", err, want)
	}
}

// TestDefaultsNamedInErrors: where a size config.json leaves out took its
// class's default and the checkpoint disagrees, the error says so, for the
// plan and the load alike, and names the right field. By hand, from the
// fixtures: mistral has 2 kv heads of head_dim 12 (k_proj [24, 96]);
// MistralConfig's 8 kv heads imply [96, 96] = 8 × 12, a multiple of 12
// as 24 is, so the default is named, not the intermediate_size 8 written
// out (its gate_proj comes later); deepseek_v2 has no q LoRA (q_proj),
// DeepseekV2Config's q_lora_rank 1536 asks for q_a_proj [1536, 96]; qwen3
// has 8 heads, Qwen3Config's 32 kv heads do not divide them. A load whose
// config takes a default that the checkpoint agrees with carries the note
// (deepseek_v3 without n_shared_experts: DeepseekV3Config's 1, the
// fixture's 1).
func TestDefaultsNamedInErrors(t *testing.T) {
	for _, c := range []struct {
		fixture string
		edit    func(m map[string]any)
		want    string
	}{
		{"mistral", func(m map[string]any) { delete(m, "num_key_value_heads"); m["intermediate_size"] = 8 },
			"num_key_value_heads 8 (MistralConfig's default: config.json has none) but tensor model.layers.0.self_attn.k_proj.weight is [24, 96] in the checkpoint (the config implies [96, 96])"},
		{"deepseek_v2", func(m map[string]any) { delete(m, "q_lora_rank") },
			"tensor model.layers.0.self_attn.q_a_proj.weight is missing from the checkpoint (expected shape [1536, 96]) (config.json leaves out q_lora_rank: DeepseekV2Config's default 1536)"},
		{"qwen3", func(m map[string]any) { delete(m, "num_key_value_heads") },
			"num_attention_heads 8 is not a multiple of num_key_value_heads 32 (config.json leaves out num_key_value_heads: Qwen3Config's default 32)"},
	} {
		dir := hostileCopy(t, c.fixture)
		hostileJSON(t, filepath.Join(dir, "config.json"), c.edit)
		if _, err := PlanDir(dir, PlanOptions{TP: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s plan: err = %v\nwant %q", c.fixture, err, c.want)
		}
		if _, err := Open(dir, Options{TP: 1, Device: "cpu"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s load: err = %v\nwant %q", c.fixture, err, c.want)
		}
	}
	dir := hostileCopy(t, "deepseek_v3")
	hostileJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
		if m["n_shared_experts"] != 1.0 {
			t.Fatalf("testdata/hf/deepseek_v3 has n_shared_experts %v, want 1", m["n_shared_experts"])
		}
		delete(m, "n_shared_experts")
	})
	e, err := Open(dir, Options{TP: 1, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const note = "n_shared_experts 1 is DeepseekV3Config's default (config.json has none)"
	if !slices.Equal(e.ConfigNotes, []string{note}) {
		t.Errorf("load notes %q, want [%q]", e.ConfigNotes, note)
	}
}
