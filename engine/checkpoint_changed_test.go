package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// checkLlamaLogits runs the llama fixture's reference sequences through e
// and compares the logits with HF transformers' (reference.safetensors)
// within 1e-5 of their max |value|, as TestHFParityLlamaFamily does.
func checkLlamaLogits(t *testing.T, e *Engine, what string) {
	t.Helper()
	ref, _ := loadReference(t, "llama")
	logits, err := e.Prefill(ref.seqs, nil, true)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := enginetest.CheckClose(logits.Values.F32(), ref.tensor(t, "logits").ToF32(), 1e-5); err != nil {
		t.Errorf("%s: logits vs HF: %v", what, err)
	}
}

// TestCheckpointChangedAfterLoad: once loaded on the CPU, the engine no
// longer reads the checkpoint file. Cutting model.safetensors to 8 bytes
// after the load (as `cp` over it does on its way to rewriting it) used to
// kill the next forward pass with SIGBUS (the CPU backend's weights aliased
// the file's memory mapping); overwriting its data area in place with
// zeros used to change the weights the session computes with, silently.
// Both now leave the logits equal to HF transformers'.
func TestCheckpointChangedAfterLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 8); err != nil {
				t.Fatal(err)
			}
		}},
		{"zeroed in place", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			st, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			var n [8]byte // the header's length; the data area follows it
			if _, err := f.ReadAt(n[:], 0); err != nil {
				t.Fatal(err)
			}
			start := 8 + int64(binary.LittleEndian.Uint64(n[:]))
			if _, err := f.WriteAt(make([]byte, st.Size()-start), start); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, tp := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/tp%d", tc.name, tp), func(t *testing.T) {
				dir := hostileCopy(t, "llama")
				e, err := Open(dir, Options{TP: tp})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				tc.damage(t, filepath.Join(dir, "model.safetensors"))
				checkLlamaLogits(t, e, tc.name)
			})
		}
	}
}

// cutOnRead is a checkpoint source that truncates the file at path to 8
// bytes just before handing out tensor `at`, as another program rewriting
// the checkpoint while hsdb loads it would.
type cutOnRead struct {
	stSource
	path, at string
}

func (c cutOnRead) Tensor(name string) (*tensor.Tensor, error) {
	if name == c.at {
		if err := os.Truncate(c.path, 8); err != nil {
			return nil, err
		}
	}
	return c.stSource.Tensor(name)
}

func (c cutOnRead) RowsView(name string, a, b int) (*tensor.Tensor, error) {
	if name == c.at {
		if err := os.Truncate(c.path, 8); err != nil {
			return nil, err
		}
	}
	return c.stSource.RowsView(name, a, b)
}

// TestCheckpointCutWhileLoading: a checkpoint cut short while the load
// reads it is an error naming the file, not SIGBUS: stored as f32 and
// kept as f32 (the CPU backend copies it out of the mapping) and widened
// from f32 to bf16 (the conversion reads the mapping).
func TestCheckpointCutWhileLoading(t *testing.T) {
	for name, dt := range map[string]tensor.DType{"f32 kept": tensor.Invalid, "f32 to bf16": tensor.BF16} {
		t.Run(name, func(t *testing.T) {
			dir := hostileCopy(t, "llama")
			cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "model.safetensors")
			f, err := safetensors.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			src := cutOnRead{stSource{f}, path, "model.layers.1.mlp.down_proj.weight"}
			e, err := LoadSource(dir, cfg, src, Options{DType: dt})
			if err == nil {
				e.Close()
				t.Fatal("a checkpoint cut short during the load loaded")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed on disk") {
				t.Fatalf("load of a checkpoint cut short = %v, want an error naming %s as changed on disk", err, path)
			}
			if !errors.Is(err, safetensors.ErrChanged) {
				t.Fatalf("load of a checkpoint cut short = %v, want safetensors.ErrChanged", err)
			}
		})
	}
}
