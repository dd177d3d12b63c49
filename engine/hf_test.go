package engine

import (
	"fmt"
	"hsdb/engine/enginetest"
	"strconv"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// hfReference is a fixture's golden tensors, computed by HF transformers
// (scripts/fixtures/make_hf_fixtures.py, run on the GPU machine; see
// testdata/README.md): each sequence run alone, outputs concatenated along
// tokens.
type hfReference struct {
	seqs [][]int32
	f    *safetensors.File
}

func loadReference(t testing.TB, name string) (*hfReference, string) {
	t.Helper()
	dir := "../testdata/hf/" + name
	f, err := safetensors.Open(dir + "/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &hfReference{f: f, seqs: enginetest.HFSeqs(t, f)}, dir
}

func (r *hfReference) tensor(t testing.TB, name string) *tensor.Tensor {
	t.Helper()
	x, err := r.f.Tensor(name)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// checkHFParity runs fixture name with opts and compares every decoder
// layer's stream (= HF's decoder layer output) and the logits with HF's
// float32 values: within tol of each tensor's max |value| when cosMin is 0;
// otherwise (bf16 runs) by cosine similarity, at least bf16Floor(cosMin, HF's
// own bf16 cosine).
func checkHFParity(t *testing.T, name string, opts Options, tol, cosMin float64) {
	for _, err := range hfParityErrors(t, name, opts, tol, cosMin) {
		t.Error(err)
	}
}

// hfParityErrors is checkHFParity's comparison, returning one error per
// tensor that departs from HF (or cannot be compared).
func hfParityErrors(t *testing.T, name string, opts Options, tol, cosMin float64) []error {
	ref, dir := loadReference(t, name)
	var hfBF16 map[string]string // HF's bf16 run: its cosine with f32 per tensor
	if cosMin > 0 {
		f, err := safetensors.Open(dir + "/reference_bf16.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		hfBF16 = f.Metadata()
		f.Close()
	}
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
	logits, err := e.Prefill(ref.seqs, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	cmp := func(what, key string, got []float32) {
		want := ref.tensor(t, key).ToF32()
		if cosMin > 0 {
			hf, err := strconv.ParseFloat(hfBF16["cosine_with_f32."+key], 64)
			if err != nil {
				t.Fatalf("reference_bf16.safetensors: no cosine for %s: %v", key, err)
			}
			if err := enginetest.CheckCosine(got, want, bf16Floor(cosMin, hf)); err != nil {
				errs = append(errs, fmt.Errorf("%s %+v: %s vs HF f32: %v (HF's own bf16 run: %.6f)", name, opts, what, err, hf))
			}
			return
		}
		if err := enginetest.CheckClose(got, want, tol); err != nil {
			errs = append(errs, fmt.Errorf("%s %+v: %s vs HF: %v", name, opts, what, err))
		}
	}
	for i := range e.Dims.Layers {
		k := fmt.Sprintf("model.layers.%d/stream", i)
		if len(rec.Got[k]) != e.World {
			t.Fatalf("%s: stream of layer %d seen on %d ranks, want %d", name, i, len(rec.Got[k]), e.World)
		}
		for r, got := range rec.Got[k] {
			cmp(fmt.Sprintf("rank %d layer %d stream", r, i), fmt.Sprintf("layer.%d", i), got.F32())
		}
	}
	cmp("logits", "logits", logits.Values.F32())
	return errs
}

// bf16Floor is the cosine a bf16 run must reach against float32 values:
// target (issue 6: 0.9999 per layer), unless bf16 rounding alone does not
// allow it — HF transformers' own bf16 run of the same checkpoint reaches
// only hf (0.99977 on the DeepSeek-V3 fixture's last layer) — and then
// hsdb's error 1-cos may be at most 1.5 times HF's.
func bf16Floor(target, hf float64) float64 {
	return min(target, 1-1.5*(1-hf))
}

var llamaFamily = []string{"llama", "llama3", "mistral", "qwen2", "qwen3"}

// TestHFParityLlamaFamily: every Llama-family fixture at --tp 1, 2 and 4
// matches HF transformers per layer and in the logits within 1e-5 (f32) on
// the CPU, 1e-4 on CUDA (cuBLAS sums in another order). The fixtures' dims
// (8 query heads, 2 kv heads, intermediate 160, vocab 101) split over 4
// ranks with kv heads replicated and the vocab padded.
func TestHFParityLlamaFamily(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, name := range llamaFamily {
			for _, tp := range []int{1, 2, 4} {
				t.Run(fmt.Sprintf("%s/tp%d", name, tp), func(t *testing.T) {
					checkHFParity(t, name, Options{TP: tp, Device: dev}, relTol(dev), 0)
				})
			}
		}
	})
}

// TestHFParityBF16: on CUDA with bf16 weights and activations, every layer's
// stream and the logits keep a cosine similarity with HF's float32 values of
// at least 0.9999 (issue 6's bf16 tolerance), or, where HF's own bf16 run
// does not reach that, within 1.5 times HF's bf16 error (bf16Floor).
func TestHFParityBF16(t *testing.T) {
	requireCUDA(t)
	for _, name := range llamaFamily {
		for _, tp := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/tp%d", name, tp), func(t *testing.T) {
				checkHFParity(t, name, Options{TP: tp, Device: "cuda", DType: tensor.BF16}, 0, 0.9999)
			})
		}
	}
}
