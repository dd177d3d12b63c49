package arch_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TestHFParityMLADecode: decode steps after a prefill on the MLA fixtures
// (DeepSeek-V3, DeepSeek-V2 without q_lora_rank, Kimi-K2.5's wrapper with
// int4 experts) match HF transformers' own outputs at the same positions:
// HF ran each whole sequence causally (reference.safetensors, positions
// 0..len-1), so its logits, every layer's output and c_kv at position p
// are what a step computing p after a cached prefix must give. Two
// schedules: the three sequences (7, 3 and 12 tokens) prefilled to 5, 1
// and 10 tokens together, then two decode steps of all three (each
// sequence's context laid out at its own offset); and the 12-token
// sequence prefilled to 2 tokens, then decoded token by token to its end.
// Every rank's stream and c_kv and the logits within 1e-5 of the largest
// reference value on the CPU (1e-4 on CUDA, as hfParity), at --tp 1, 2, 4
// and --tp 2 --ep.
func TestHFParityMLADecode(t *testing.T) {
	for _, name := range []string{"deepseek_v3", "deepseek_v2", "kimi_k25"} {
		var f *hfFixture
		if name == "kimi_k25" {
			f = loadKimiFixture(t, name)
		} else {
			f = loadFixture(t, name)
		}
		for _, dev := range []string{"cpu", "cuda"} {
			tol := 1e-5
			if dev == "cuda" {
				tol = 1e-4
			}
			for _, o := range parityOptions {
				o.Device = dev
				if dev == "cuda" {
					o.DType = tensor.F32
				}
				t.Run(name+"/"+dev+"/"+optName(o), func(t *testing.T) {
					var e *engine.Engine
					var err error
					if f.weights == nil {
						e, err = engine.LoadDir(f.dir, o)
					} else {
						e, err = engine.LoadSource(f.dir, f.config, &model.MapSource{Name: f.dir, Tensors: f.weights}, o)
					}
					if errors.Is(err, engine.ErrDevice) {
						t.Skipf("no %s backend here: %v", o.Device, err)
					}
					if err != nil {
						t.Fatal(err)
					}
					defer e.Close()
					decodeParity(t, f, e, o.TP, []int{0, 1, 2}, 2, tol)
					decodeParity(t, f, e, o.TP, []int{2}, len(f.seqs[2])-2, tol)
				})
			}
		}
	}
}

// decodeParity prefills the fixture's sequences seqs without their last
// steps tokens, decodes those tokens one step at a time, and compares the
// logits of the prefill's last tokens and of every step, and each step's
// per-layer stream and c_kv on every rank, with HF's rows at the same
// positions.
func decodeParity(t *testing.T, f *hfFixture, e *engine.Engine, world int, seqs []int, steps int, tol float64) {
	t.Helper()
	start := make([]int, len(f.seqs)) // each sequence's first row in the reference
	for i := 1; i < len(f.seqs); i++ {
		start[i] = start[i-1] + len(f.seqs[i-1])
	}
	refRow := func(key string, s, pos int) []float32 {
		t.Helper()
		ref, ok := f.ref[key]
		if !ok {
			t.Fatalf("reference has no %s", key)
		}
		w := ref.Shape[1]
		return ref.ToF32()[(start[s]+pos)*w : (start[s]+pos+1)*w]
	}
	cmp := func(what string, got, want []float32) {
		t.Helper()
		if err := enginetest.CheckClose(got, want, tol); err != nil {
			t.Errorf("%s vs HF: %v", what, err)
		}
	}
	prefix := make([][]int32, len(seqs))
	for i, s := range seqs {
		prefix[i] = f.seqs[s][:len(f.seqs[s])-steps]
	}
	l, err := e.Prefill(prefix, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		cmp(fmt.Sprintf("seq %d prefill of %d: logits", s, len(prefix[i])), l.Row(i), refRow("logits", s, len(prefix[i])-1))
	}
	for k := range steps {
		ids := make([]int32, len(seqs))
		for i, s := range seqs {
			ids[i] = f.seqs[s][len(prefix[i])+k]
		}
		rec := &enginetest.Recorder{Sites: func(s *model.Site) bool {
			return enginetest.LayerOutputs(s) || strings.HasSuffix(s.Path, ".self_attn")
		}, Names: []string{"stream", "c_kv"}}
		l, err := e.Decode(ids, rec)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			pos := len(prefix[i]) + k
			at := fmt.Sprintf("seq %d position %d", s, pos)
			cmp(at+": logits", l.Row(i), refRow("logits", s, pos))
			for layer := range e.Dims.Layers {
				p := fmt.Sprintf("model.layers.%d", layer)
				for r := range world {
					for _, c := range []struct{ key, ref string }{{p + "/stream", fmt.Sprintf("layer.%d", layer)}, {p + ".self_attn/c_kv", fmt.Sprintf("attn.%d.c_kv", layer)}} {
						got := rec.Rank(c.key, r)
						if got == nil || len(got.Shape) != 2 || got.Shape[0] != len(seqs) {
							t.Fatalf("%s rank %d: %s recorded as %v, want %d rows", at, r, c.key, shapeOf(got), len(seqs))
						}
						w := got.Shape[1]
						cmp(fmt.Sprintf("%s rank %d %s", at, r, c.key), got.ToF32()[i*w:(i+1)*w], refRow(c.ref, s, pos))
					}
				}
			}
		}
	}
}
