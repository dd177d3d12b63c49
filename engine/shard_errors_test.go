package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestBrokenShardNotTakenForAbsent: a tensor whose shard cannot be opened
// (cut short by an interrupted download, or lacking a tensor the index
// places in it) is never taken for a tensor the checkpoint does not have.
// The router's e_score_correction_bias, which HF and hsdb default to zeros
// when absent, moved into a third shard that is truncated: the model
// loaded routing every token with a zero bias; it now fails naming the
// shard and what is wrong with it. A truncated shard holding the LM head
// or the embedding, and an index placing the LM head in a shard without
// it, were reported as "tensor ... is missing from the checkpoint" or "the
// checkpoint has no embedding table"; they now name the shard's fault, and
// so does `hsdb plan`, which planned from config.json alone. An index
// that leaves out a tensor its shard holds fails likewise.
func TestBrokenShardNotTakenForAbsent(t *testing.T) {
	const s1, s2, s3 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model-00003-of-00003.safetensors"
	const bias = "language_model.model.layers.1.mlp.gate.e_score_correction_bias"
	truncate := func(t *testing.T, p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b[:len(b)-8], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index := func(dir string) string { return filepath.Join(dir, safetensors.IndexName) }
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   []string
	}{
		{"bias in a truncated shard", func(t *testing.T, dir string) {
			var moved *tensor.Tensor
			hostileTensors(t, filepath.Join(dir, s2), func(m map[string]*tensor.Tensor, _ *[]string) {
				moved = m[bias]
				delete(m, bias)
			})
			p := filepath.Join(dir, s3)
			if err := safetensors.WriteFile(p, []safetensors.Named{{Name: bias, T: moved}}, nil); err != nil {
				t.Fatal(err)
			}
			truncate(t, p)
			hostileJSON(t, index(dir), func(m map[string]any) { m["weight_map"].(map[string]any)[bias] = s3 })
		}, []string{s3, bias, "data area"}},
		{"LM head's shard truncated", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, s1)) }, []string{s1, "data area"}},
		{"index places the head in the wrong shard", func(t *testing.T, dir string) {
			hostileJSON(t, index(dir), func(m map[string]any) { m["weight_map"].(map[string]any)["language_model.lm_head.weight"] = s2 })
		}, []string{s2, "language_model.lm_head.weight", "index names a tensor its shard lacks"}},
		// The index leaves the bias out while its shard holds it:
		// transformers and vLLM load it from the shard, hsdb routed with
		// a zero bias (another model; the fixture's greedy output
		// changed) and now refuses the shard, naming the tensor.
		{"index leaves out a tensor its shard holds", func(t *testing.T, dir string) {
			hostileJSON(t, index(dir), func(m map[string]any) { delete(m["weight_map"].(map[string]any), bias) })
		}, []string{s2, bias, "weight_map does not name it"}},
		{"index names config.json as a shard", func(t *testing.T, dir string) {
			hostileJSON(t, index(dir), func(m map[string]any) {
				m["weight_map"].(map[string]any)["language_model.lm_head.weight"] = "config.json"
			})
		}, []string{"opening shard config.json", "header too large"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := hostileCopy(t, "kimi_k25")
			c.damage(t, dir)
			e, err := LoadDir(dir, Options{TP: 1})
			if err == nil {
				e.Close()
				t.Fatal("loaded; want an error naming the broken shard")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "missing from the checkpoint") || strings.Contains(err.Error(), "no embedding table") {
				t.Errorf("error %q blames an absent tensor", err)
			}
			if errors.Is(err, safetensors.ErrNoTensor) {
				t.Errorf("error %q wraps ErrNoTensor", err)
			}
			// hsdb plan reads the same headers: it must not plan the
			// shard's tensors as absent either (it reads no routing bias).
			if p, err := PlanDir(dir, PlanOptions{TP: 1}); c.name != "bias in a truncated shard" && (err == nil || !strings.Contains(err.Error(), c.want[0])) {
				t.Errorf("PlanDir = %v, %v; want an error naming %s", p, err, c.want[0])
			}
		})
	}
}
