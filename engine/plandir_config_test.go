package engine

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine/modelpath"
	"hsdb/engine/regfile"
)

// TestPlanDirConfigNotRegular: `hsdb plan` reads config.json as the load
// does: a named pipe in its place is refused at once (PlanDir opened it and
// waited for a writer forever), and a config.json over
// modelpath.MaxConfigBytes is refused from its size, naming the bound
// (PlanDir read it whole, whatever its size).
func TestPlanDirConfigNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "config.json"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := PlanDir(dir, PlanOptions{TP: 1}); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, regfile.ErrNotRegular) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("a named pipe as config.json: %v; want ErrNotRegular naming config.json", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PlanDir still waiting on a named pipe after 10 s")
	}

	dir = t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, modelpath.MaxConfigBytes+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if _, err := PlanDir(dir, PlanOptions{TP: 1}); !errors.Is(err, regfile.ErrTooLarge) {
		t.Errorf("a config.json of %d bytes: %v; want ErrTooLarge", modelpath.MaxConfigBytes+1, err)
	}
}

// TestPlanQuantizedWithoutConfig: a checkpoint that stores fp8 weights
// (DeepSeek-V3's fixture) or compressed-tensors weight_packed ones
// (Kimi-K2-Thinking's) under a config.json without quantization_config is
// refused by the plan naming the tensor, as the load refuses it; the plan
// counted the weights as dense, said "none quantized" and that it fits.
func TestPlanQuantizedWithoutConfig(t *testing.T) {
	for _, c := range []struct{ fixture, want string }{
		{"deepseek_v3_fp8", "is fp8 but the config has no quantization_config to dequantize it"},
		{"kimi_k2_thinking", "_packed (compressed-tensors int4) but config.json has no quantization_config to unpack it"},
	} {
		dir := t.TempDir()
		src := filepath.Join("../testdata/hf", c.fixture)
		for _, f := range []string{"config.json", "model.safetensors"} {
			data, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if f == "config.json" {
				var cfg map[string]any
				if err := json.Unmarshal(data, &cfg); err != nil {
					t.Fatal(err)
				}
				delete(cfg, "quantization_config")
				if data, err = json.Marshal(cfg); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p, err := PlanDir(dir, PlanOptions{TP: 1})
		if p != nil || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s without quantization_config: plan %v, %v\nwant an error containing %q", c.fixture, p != nil, err, c.want)
		}
	}
}
