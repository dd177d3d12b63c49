package arch_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"hsdb/engine/enginetest"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// Parity with HF transformers 5.x: testdata/hf/NAME/ holds a checkpoint
// saved by HF (config.json, model.safetensors) and reference.safetensors
// with HF's own outputs for three sequences (scripts/fixtures/
// make_hf_fixtures.py, run on the GPU machine).

// fixtureDir returns the fixture's directory; the fixtures are committed, so
// a missing one is a failure.
func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	d := "../../testdata/hf/" + name
	if _, err := os.Stat(filepath.Join(d, "reference.safetensors")); err != nil {
		t.Fatalf("fixture %s: %v (regenerate with scripts/gpu-fixtures.sh)", name, err)
	}
	return d
}

// readSafetensors reads every tensor of a fixture file into memory.
func readSafetensors(t *testing.T, path string) (map[string]*tensor.Tensor, map[string]string) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*tensor.Tensor{}
	for _, name := range f.Names() {
		x, err := f.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		c := tensor.New(x.DType, x.Shape...)
		copy(c.Data, x.Data)
		out[name] = c
	}
	return out, f.Metadata()
}

// hfFixture is one loaded fixture.
type hfFixture struct {
	dir     string
	config  []byte
	weights map[string]*tensor.Tensor
	ref     map[string]*tensor.Tensor
	meta    map[string]string
	seqs    [][]int32
}

func loadFixture(t *testing.T, name string) *hfFixture {
	dir := fixtureDir(t, name)
	f := &hfFixture{dir: dir}
	var err error
	if f.config, err = os.ReadFile(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	f.weights, _ = readSafetensors(t, filepath.Join(dir, "model.safetensors"))
	f.ref, f.meta = readSafetensors(t, filepath.Join(dir, "reference.safetensors"))
	if f.seqs, err = enginetest.SplitSeqs(f.ref["input_ids"], f.ref["seq_lens"]); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return f
}

// parityOptions are the splits the parity tests run; a split the fixture's
// dimensions do not allow (vLLM would refuse it too) is skipped with the
// reason.
var parityOptions = []engine.Options{{TP: 1}, {TP: 2}, {TP: 4}, {TP: 2, EP: true}}

func optName(o engine.Options) string {
	if o.EP {
		return fmt.Sprintf("ep%d", o.TP)
	}
	return fmt.Sprintf("tp%d", o.TP)
}

// TestHFParityDeepseekV3, V2, V3FP8: per-layer stream, the latent c_kv, the
// router's logits, experts and weights, and the logits equal HF's within
// 1e-5 (relative to the largest reference value) at every split; the chosen
// experts are identical as sets per token.
func TestHFParityDeepseekV3(t *testing.T)    { hfParity(t, "deepseek_v3") }
func TestHFParityDeepseekV2(t *testing.T)    { hfParity(t, "deepseek_v2") }
func TestHFParityDeepseekV3FP8(t *testing.T) { hfParity(t, "deepseek_v3_fp8") }

func hfParity(t *testing.T, name string) {
	f := loadFixture(t, name)
	for _, dev := range []string{"cpu", "cuda"} {
		// CUDA runs the f32 path with cuBLAS, whose summation order differs:
		// 1e-4 there (issue 6), identical expert choices still required.
		tol := 1e-5
		if dev == "cuda" {
			tol = 1e-4
		}
		for _, o := range parityOptions {
			o.Device = dev
			t.Run(dev+"/"+optName(o), func(t *testing.T) { hfParityRun(t, f, name, o, tol) })
		}
	}
}

func hfParityRun(t *testing.T, f *hfFixture, name string, o engine.Options, tol float64) {
	e, err := engine.LoadSource(f.dir, f.config, &model.MapSource{Name: f.dir, Tensors: f.weights}, o)
	if errors.Is(err, engine.ErrDevice) {
		t.Skipf("no %s backend here: %v", o.Device, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if strings.HasSuffix(name, "_fp8") {
		if want := f.meta["fp8_quantized_tensors"]; want == "" || strconv.Itoa(len(e.Report.Dequantized)) != want {
			t.Errorf("dequantized %d tensors, the fixture quantized %s", len(e.Report.Dequantized), want)
		}
	}
	hfParityCheck(t, f, e, o, tol)
}

// hfParityCheck runs the fixture's sequences on e and compares every
// layer's stream on every rank, the latent c_kv, the router's logits,
// experts and weights, and the logits with HF's reference within tol.
func hfParityCheck(t *testing.T, f *hfFixture, e *engine.Engine, o engine.Options, tol float64) {
	t.Helper()
	rec := &enginetest.Recorder{Sites: func(s *model.Site) bool {
		return enginetest.LayerOutputs(s) || strings.HasSuffix(s.Path, ".self_attn") || strings.HasSuffix(s.Path, ".mlp.gate")
	}, Names: []string{"stream", "c_kv", "logits", "topk_ids", "topk_weights"}}
	logits, err := e.Prefill(f.seqs, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got *tensor.Tensor, ref string) {
		t.Helper()
		want, ok := f.ref[ref]
		if !ok {
			t.Errorf("reference has no %s", ref)
			return
		}
		if got == nil {
			t.Errorf("%s was not recorded", what)
			return
		}
		if err := enginetest.CheckClose(got.ToF32(), want.ToF32(), tol); err != nil {
			t.Errorf("%s vs HF %s: rel diff %v", what, ref, err)
		}
	}
	check("logits", logits.Values, "logits")
	for i := range e.Dims.Layers {
		p := fmt.Sprintf("model.layers.%d", i)
		for r := range o.TP {
			check(fmt.Sprintf("rank %d %s stream", r, p), rec.Rank(p+"/stream", r), fmt.Sprintf("layer.%d", i))
			check(fmt.Sprintf("rank %d %s c_kv", r, p), rec.Rank(p+".self_attn/c_kv", r), fmt.Sprintf("attn.%d.c_kv", i))
		}
		if _, ok := f.ref[fmt.Sprintf("router.%d.topk_ids", i)]; !ok {
			continue
		}
		g := p + ".mlp.gate/"
		check(g+"logits", rec.Rank(g+"logits", 0), fmt.Sprintf("router.%d.logits", i))
		compareRouting(t, g, rec.Rank(g+"topk_ids", 0), rec.Rank(g+"topk_weights", 0),
			f.ref[fmt.Sprintf("router.%d.topk_ids", i)], f.ref[fmt.Sprintf("router.%d.topk_weights", i)], tol)
	}
}

// compareRouting checks per token that the chosen experts are HF's (as sets:
// HF's topk is unsorted) and that each expert's weight matches HF's within
// tol.
func compareRouting(t *testing.T, site string, ids, w, refIDs, refW *tensor.Tensor, tol float64) {
	t.Helper()
	if ids == nil || w == nil || refIDs == nil || refW == nil || !slices.Equal(ids.Shape, refIDs.Shape) {
		t.Errorf("%s: routing not comparable: %v vs %v", site, shapeOf(ids), shapeOf(refIDs))
		return
	}
	T, k := ids.Shape[0], ids.Shape[1]
	for tok := range T {
		got, want := map[int64]float32{}, map[int64]float32{}
		for j := range k {
			got[ids.Int(tok*k+j)] = w.F32()[tok*k+j]
			want[refIDs.Int(tok*k+j)] = refW.ToF32()[tok*k+j]
		}
		for e, wv := range want {
			gv, ok := got[e]
			if !ok {
				t.Errorf("%s token %d: experts %v, HF chose %v", site, tok, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
				break
			}
			if !(math.Abs(float64(gv-wv)) <= tol*math.Max(1, math.Abs(float64(wv)))) {
				t.Errorf("%s token %d expert %d: weight %v, HF %v", site, tok, e, gv, wv)
			}
		}
	}
}

func shapeOf(t *tensor.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

// TestHFParityDeepseekRoPE: the inverse frequencies of the rotary part
// equal HF's own (reference tensor rope.inv_freq) for the fixtures' YaRN.
func TestHFParityDeepseekRoPE(t *testing.T) {
	for _, name := range []string{"deepseek_v3", "deepseek_v2"} {
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, name)
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(f.config, &raw); err != nil {
				t.Fatal(err)
			}
			var dims struct {
				Rope   int `json:"qk_rope_head_dim"`
				MaxPos int `json:"max_position_embeddings"`
			}
			_ = json.Unmarshal(f.config, &dims)
			rc, err := model.ParseRoPE(raw, dims.MaxPos, 10000)
			if err != nil {
				t.Fatal(err)
			}
			inv, ms := rc.InvFreq(dims.Rope)
			want, ok := f.ref["rope.inv_freq"]
			if !ok {
				t.Fatal("reference has no rope.inv_freq (make_hf_fixtures.py records it for every DeepSeek fixture)")
			}
			if err := enginetest.CheckClose(inv, want.ToF32(), 1e-6); err != nil {
				t.Errorf("inv_freq %v, HF %v: %v", inv, want.ToF32(), err)
			}
			s, ok := f.meta["rope_attention_scaling"]
			if !ok {
				t.Fatal("reference metadata has no rope_attention_scaling")
			}
			hf, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("reference metadata rope_attention_scaling %q: %v", s, err)
			}
			if !(math.Abs(float64(ms)-hf) <= 1e-6) {
				t.Errorf("attention scaling %v, HF %v", ms, hf)
			}
		})
	}
}

// TestHFParityDeepseekBF16 runs the DeepSeek fixtures on CUDA in bf16 (issue
// 5's bf16 tolerance), at --tp 1 and 2: every layer's stream keeps a cosine
// similarity with HF's float32 values of at least 0.9999 or, where HF
// transformers' own bf16 run of the same checkpoint does not reach that
// (0.99977 on deepseek_v3's last layer: bf16 rounding alone; recorded in
// reference_bf16.safetensors by scripts/fixtures/make_bf16_references.py),
// an error 1-cos at most 1.5 times HF's. Expert choices are compared in the
// f32 runs of hfParity. Skipped where no CUDA backend is present.
func TestHFParityDeepseekBF16(t *testing.T) {
	for _, name := range []string{"deepseek_v3", "deepseek_v2"} {
		f := loadFixture(t, name)
		for _, tp := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/tp%d", name, tp), func(t *testing.T) {
				o := engine.Options{TP: tp, Device: "cuda", DType: tensor.BF16}
				e, err := engine.LoadSource(f.dir, f.config, &model.MapSource{Name: f.dir, Tensors: f.weights}, o)
				if errors.Is(err, engine.ErrDevice) {
					t.Skipf("no cuda backend here: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				checkBF16Streams(t, f, e, tp, 1.5)
			})
		}
	}
}

// checkBF16Streams prefills f.seqs on the bf16 engine e (tp ranks) and
// checks every layer's stream on every rank against HF's float32 values
// (f.ref "layer.N"): its cosine must reach 0.9999 or, where HF
// transformers' own bf16 run does not (reference_bf16.safetensors'
// cosine_with_f32.layer.N), an error 1-cos at most factor times HF's.
func checkBF16Streams(t *testing.T, f *hfFixture, e *engine.Engine, tp int, factor float64) {
	t.Helper()
	rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
	if _, err := e.Prefill(f.seqs, rec, true); err != nil {
		t.Fatal(err)
	}
	_, hf := readSafetensors(t, filepath.Join(f.dir, "reference_bf16.safetensors"))
	for i := range e.Dims.Layers {
		want := f.ref[fmt.Sprintf("layer.%d", i)].ToF32()
		hfCos, err := strconv.ParseFloat(hf[fmt.Sprintf("cosine_with_f32.layer.%d", i)], 64)
		if err != nil {
			t.Fatalf("reference_bf16.safetensors: layer %d: %v", i, err)
		}
		floor := min(0.9999, 1-factor*(1-hfCos))
		for r := range tp {
			got := rec.Rank(fmt.Sprintf("model.layers.%d/stream", i), r)
			if got == nil {
				t.Fatalf("layer %d rank %d: no stream recorded", i, r)
			}
			if err := enginetest.CheckCosine(got.ToF32(), want, floor); err != nil {
				t.Errorf("layer %d rank %d vs HF f32: %v (HF's own bf16 run: cosine %.6f)", i, r, err, hfCos)
			}
		}
	}
}
