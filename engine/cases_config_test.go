package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
)

// Regression tests for ../shared/cases/README.md cases 7, 8 and 9 (absurd
// configs are checked before they are used): testdata/hf/llama (3 layers,
// 8 heads of head_dim 12, q_proj [96, 96]) with one config.json field
// replaced, loaded with its weights and planned with and without them.

// llamaWith writes testdata/hf/llama's config.json with old replaced by new
// into a temporary directory, with the checkpoint linked in when weights.
func llamaWith(t *testing.T, old, new string, weights bool) string {
	t.Helper()
	raw, err := os.ReadFile("../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), old) {
		t.Fatalf("config.json has no %s", old)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if weights {
		abs, err := filepath.Abs("../testdata/hf/llama/model.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, "model.safetensors")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// wantLimit checks that err is a bound violation whose message holds every
// part of want.
func wantLimit(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, model.ErrConfigLimit) {
		t.Errorf("%s: err = %v, want a config limit error", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
	if errors.Is(err, engine.ErrMemory) {
		t.Errorf("%s: reported as a memory shortage: %v", what, err)
	}
}

// TestCase7LayersAbsurd: num_hidden_layers 1e9 (and 1000000000) is refused
// before any tree is built, naming the field and, with the weights, the
// checkpoint's 3 layers.
func TestCase7LayersAbsurd(t *testing.T) {
	for _, v := range []string{"1e9", "1000000000"} {
		dir := llamaWith(t, `"num_hidden_layers": 3`, `"num_hidden_layers": `+v, true)
		_, err := engine.Open(dir, engine.Options{TP: 1})
		wantLimit(t, "load "+v, err, "num_hidden_layers "+v, "at most 4096", "the checkpoint holds 3 decoder layers (layers 0-2)")
		_, err = engine.PlanDir(dir, engine.PlanOptions{TP: 8, Tokens: 4096})
		wantLimit(t, "plan "+v, err, "num_hidden_layers "+v, "3 decoder layers")
		_, err = engine.PlanDir(llamaWith(t, `"num_hidden_layers": 3`, `"num_hidden_layers": `+v, false), engine.PlanOptions{TP: 1})
		wantLimit(t, "plan without weights "+v, err, "num_hidden_layers "+v, "at most 4096")
	}
}

// TestCase8HeadsAbsurd: num_attention_heads 2^40 names the field and what
// the weights imply (q_proj's 96 rows are 8 heads of head_dim 12), never
// "not enough memory".
func TestCase8HeadsAbsurd(t *testing.T) {
	dir := llamaWith(t, `"num_attention_heads": 8`, `"num_attention_heads": 1099511627776`, true)
	_, err := engine.Open(dir, engine.Options{TP: 1})
	wantLimit(t, "load", err, "num_attention_heads 1099511627776", "the weights imply num_attention_heads 8",
		"model.layers.0.self_attn.q_proj.weight has 96 rows")
	_, err = engine.PlanDir(dir, engine.PlanOptions{TP: 1, Tokens: 4096, DeviceBytes: 141 << 30})
	wantLimit(t, "plan", err, "num_attention_heads 1099511627776", "num_attention_heads 8")
}

// TestCase9DTypeUnknown: dtype or torch_dtype "float7" names the field and
// the accepted values.
func TestCase9DTypeUnknown(t *testing.T) {
	for _, c := range []struct{ old, new, field string }{
		{`"dtype": "float32"`, `"dtype": "float7"`, "dtype"},
		{`"dtype": "float32"`, `"torch_dtype": "float7"`, "torch_dtype"},
	} {
		dir := llamaWith(t, c.old, c.new, true)
		_, err := engine.Open(dir, engine.Options{TP: 1})
		wantLimit(t, c.field, err, c.field+` "float7"`, "float32, bfloat16, float16, float64")
		_, err = engine.PlanDir(dir, engine.PlanOptions{TP: 1})
		wantLimit(t, "plan "+c.field, err, c.field+` "float7"`)
	}
}

// TestPlanTreeBound: a split whose module tree would be too large to build
// (layers × (experts + 1) × ranks) is one clear error, before the tree:
// 4096 layers (the most a config may have) over 2048 ranks.
func TestPlanTreeBound(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"architectures": ["LlamaForCausalLM"], "hidden_size": 96, "head_dim": 12, "intermediate_size": 2048, "num_hidden_layers": 4096,
"num_attention_heads": 2048, "num_key_value_heads": 2048, "vocab_size": 101, "torch_dtype": "bfloat16"}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := engine.PlanDir(dir, engine.PlanOptions{TP: 2048})
	if !errors.Is(err, model.ErrConfigLimit) || !strings.Contains(err.Error(), "num_hidden_layers 4096 × (n_routed_experts 0 + 1) × world size 2048") {
		t.Errorf("err = %v", err)
	}
	if _, err := engine.PlanDir(dir, engine.PlanOptions{TP: 8}); err != nil {
		t.Errorf("8 ranks: %v", err)
	}
}
