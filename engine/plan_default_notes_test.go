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
