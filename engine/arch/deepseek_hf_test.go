package arch_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Parity with HF transformers 5.x: testdata/hf/NAME/ holds a checkpoint
// saved by HF (config.json, model.safetensors) and reference.safetensors
// with HF's own outputs for three sequences (scripts/fixtures/
// make_hf_fixtures.py, run on the GPU machine). The tests skip, naming the
// missing directory, until the fixtures are committed.

// fixtureDir returns the fixture's directory or skips the test.
func fixtureDir(t *testing.T, name string) string {
	t.Helper()
	var tried []string
	for _, d := range []string{"../../testdata/hf/" + name, "../../testdata/fixtures/hf/" + name} {
		if _, err := os.Stat(filepath.Join(d, "reference.safetensors")); err == nil {
			return d
		}
		tried = append(tried, d)
	}
	t.Skipf("fixture %s not present (looked in %s): generate it with scripts/fixtures/make_hf_fixtures.py", name, strings.Join(tried, ", "))
	return ""
}

// readSafetensors is a minimal reader for the fixtures (header JSON, then
// little-endian data), so that these tests do not depend on
// engine/safetensors. Every tensor is copied to its own aligned buffer.
func readSafetensors(t *testing.T, path string) (map[string]*tensor.Tensor, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8 {
		t.Fatalf("%s: %d bytes", path, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		t.Fatalf("%s: header of %d bytes in a file of %d", path, n, len(data))
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &hdr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	body := data[8+n:]
	out := map[string]*tensor.Tensor{}
	var meta map[string]string
	for name, raw := range hdr {
		if name == "__metadata__" {
			_ = json.Unmarshal(raw, &meta)
			continue
		}
		var e struct {
			DType   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: %s: %v", path, name, err)
		}
		dt, ok := tensor.FromSafetensors(e.DType)
		if !ok {
			t.Fatalf("%s: %s: dtype %s", path, name, e.DType)
		}
		tt := tensor.New(dt, e.Shape...)
		if e.Offsets[1]-e.Offsets[0] != int64(len(tt.Data)) || e.Offsets[1] > int64(len(body)) {
			t.Fatalf("%s: %s: offsets %v for %s %v", path, name, e.Offsets, e.DType, e.Shape)
		}
		copy(tt.Data, body[e.Offsets[0]:e.Offsets[1]])
		out[name] = tt
	}
	return out, meta
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
	ids, lens := f.ref["input_ids"], f.ref["seq_lens"]
	off := 0
	for s := range lens.Numel() {
		n := int(lens.Int(s))
		seq := make([]int32, n)
		for i := range n {
			seq[i] = int32(ids.Int(off + i))
		}
		f.seqs = append(f.seqs, seq)
		off += n
	}
	if off != ids.Numel() {
		t.Fatalf("%s: seq_lens sum to %d, input_ids has %d", dir, off, ids.Numel())
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
	for _, o := range parityOptions {
		t.Run(optName(o), func(t *testing.T) {
			e, err := engine.LoadSource(f.dir, f.config, &model.MapSource{Name: f.dir, Tensors: f.weights}, o)
			if err != nil {
				if strings.Contains(err.Error(), "is not divisible by --tp") {
					t.Skipf("%s at %s: %v (needs a fixture whose heads and intermediate sizes divide)", name, optName(o), err)
				}
				t.Fatal(err)
			}
			if strings.HasSuffix(name, "_fp8") {
				if want := f.meta["fp8_quantized_tensors"]; want != "" && strconv.Itoa(len(e.Report.Dequantized)) != want {
					t.Errorf("dequantized %d tensors, the fixture quantized %s", len(e.Report.Dequantized), want)
				}
			}
			rec := &recorder{want: func(s *model.Site) bool {
				return layerOutputs(s) || strings.HasSuffix(s.Path, ".self_attn") || strings.HasSuffix(s.Path, ".mlp.gate")
			}, names: []string{"stream", "c_kv", "logits", "topk_ids", "topk_weights"}}
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
				if d := maxRelDiff(got.ToF32(), want.ToF32()); d > 1e-5 {
					t.Errorf("%s vs HF %s: rel diff %.3g", what, ref, d)
				}
			}
			check("logits", logits.Values, "logits")
			for i := range e.Dims.Layers {
				p := fmt.Sprintf("model.layers.%d", i)
				for r := range o.TP {
					check(fmt.Sprintf("rank %d %s stream", r, p), rankTensor(rec, p+"/stream", r), fmt.Sprintf("layer.%d", i))
					check(fmt.Sprintf("rank %d %s c_kv", r, p), rankTensor(rec, p+".self_attn/c_kv", r), fmt.Sprintf("attn.%d.c_kv", i))
				}
				if _, ok := f.ref[fmt.Sprintf("router.%d.topk_ids", i)]; !ok {
					continue
				}
				g := p + ".mlp.gate/"
				check(g+"logits", rankTensor(rec, g+"logits", 0), fmt.Sprintf("router.%d.logits", i))
				compareRouting(t, g, rankTensor(rec, g+"topk_ids", 0), rankTensor(rec, g+"topk_weights", 0),
					f.ref[fmt.Sprintf("router.%d.topk_ids", i)], f.ref[fmt.Sprintf("router.%d.topk_weights", i)])
			}
		})
	}
}

func rankTensor(r *recorder, k string, rank int) *tensor.Tensor {
	if v := r.got[k]; rank < len(v) {
		return v[rank]
	}
	return nil
}

// compareRouting checks per token that the chosen experts are HF's (as sets:
// HF's topk is unsorted) and that each expert's weight matches HF's within
// 1e-5.
func compareRouting(t *testing.T, site string, ids, w, refIDs, refW *tensor.Tensor) {
	t.Helper()
	if ids == nil || w == nil || refIDs == nil || refW == nil || !sameShape(ids.Shape, refIDs.Shape) {
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
				t.Errorf("%s token %d: experts %v, HF chose %v", site, tok, keys(got), keys(want))
				break
			}
			if math.Abs(float64(gv-wv)) > 1e-5*math.Max(1, math.Abs(float64(wv))) {
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

func keys(m map[int64]float32) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
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
				t.Skip("reference has no rope.inv_freq")
			}
			if d := maxRelDiff(inv, want.ToF32()); d > 1e-6 {
				t.Errorf("inv_freq %v, HF %v", inv, want.ToF32())
			}
			if s, ok := f.meta["rope_attention_scaling"]; ok {
				if hf, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(float64(ms)-hf) > 1e-6 {
					t.Errorf("attention scaling %v, HF %v", ms, hf)
				}
			}
		})
	}
}
