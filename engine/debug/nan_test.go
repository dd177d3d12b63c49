package debug

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestNaNLogitsNoted: a model whose final norm weight holds a NaN runs to
// the end with a note that the next tokens mean nothing (regression: `run`
// printed "next 0" silently).
func TestNaNLogitsNoted(t *testing.T) {
	src, err := safetensors.Open("../../testdata/hf/llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var named []safetensors.Named
	for _, n := range src.Names() {
		x, err := src.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		c := tensor.New(x.DType, x.Shape...)
		copy(c.Data, x.Data)
		if n == "model.norm.weight" {
			c.F32()[3] = float32(math.NaN())
		}
		named = append(named, safetensors.Named{Name: n, T: c})
	}
	dir := t.TempDir()
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), named, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := New(e)
	if err := s.SetBatch([][]int32{{1, 5, 7}}); err != nil {
		t.Fatal(err)
	}
	o, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if o.Done == nil || len(o.Done.Notes) != 1 || !strings.Contains(o.Done.Notes[0], "seq 0: the logits hold 101 NaN/Inf of 101") {
		t.Fatalf("outcome %+v", o.Done)
	}
}
