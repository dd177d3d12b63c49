package arch_test

import (
	"errors"
	"hsdb/engine/enginetest"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Loading DeepSeek checkpoints: a range of layers, fp8 block-quantized
// weights, a multimodal wrapper, transformers-5 fused experts, the memory
// estimate.

// TestDeepseekLayerRange: --layers 2-3 reads exactly the embeddings, layers 2
// and 3, the final norm and the LM head, and its layers equal the full
// model's. To make the full model's layer 2 see what the cut model's layer 2
// sees (the embeddings), layers 0 and 1 are made to add nothing to the
// residual stream: their o_proj and MLP down projections are zero, so each
// returns (0, input) and the stream stays the embeddings exactly.
func TestDeepseekLayerRange(t *testing.T) {
	c := parseCfg(t, v3Config)
	w := randWeights(c, 21, 0.05)
	for name, tt := range w {
		if regexp.MustCompile(`^model\.layers\.[01]\..*(o_proj|down_proj)\.weight$`).MatchString(name) {
			w[name] = tensor.New(tensor.F32, tt.Shape...)
		}
	}
	want := func(s *model.Site) bool { return enginetest.LayerOutputs(s) }
	ref := &enginetest.Recorder{Sites: want, Names: []string{"stream"}}
	full, err := load(t, v3Config, &model.MapSource{Name: "v3", Tensors: w}, engine.Options{TP: 1}).Prefill(prompts, ref, true)
	if err != nil {
		t.Fatal(err)
	}

	src := newCounting("v3", w)
	e := load(t, v3Config, src, engine.Options{TP: 1, Layers: &model.LayerRange{First: 2, Last: 3}})
	var wantBytes int64
	var wantNames []string
	for name, tt := range w {
		if !strings.HasPrefix(name, "model.layers.") || strings.HasPrefix(name, "model.layers.2.") || strings.HasPrefix(name, "model.layers.3.") {
			wantBytes += int64(len(tt.Data))
			wantNames = append(wantNames, name)
		}
	}
	var gotNames []string
	for n := range src.names {
		gotNames = append(gotNames, n)
	}
	sort.Strings(wantNames)
	sort.Strings(gotNames)
	if strings.Join(gotNames, " ") != strings.Join(wantNames, " ") {
		t.Errorf("read %d tensors, want %d:\n%v\n%v", len(gotNames), len(wantNames), gotNames, wantNames)
	}
	if src.bytes.Load() != wantBytes {
		t.Errorf("read %d bytes, want %d", src.bytes.Load(), wantBytes)
	}
	if e.Estimate[0] != wantBytes+vocabPad {
		t.Errorf("estimate %d bytes, want %d (all f32, one rank, padded vocabulary)", e.Estimate[0], wantBytes+vocabPad)
	}
	for _, s := range e.Tree.Sites {
		if s.Layer >= 0 && s.Layer < 2 {
			t.Fatalf("site %s of a layer that was not selected", s.Path)
		}
	}
	rec := &enginetest.Recorder{Sites: want, Names: []string{"stream"}}
	cut, err := e.Prefill(prompts, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"model.layers.2/stream", "model.layers.3/stream"} {
		if len(rec.Got[k]) != 1 {
			t.Fatalf("%s not recorded", k)
		}
		if err := enginetest.CheckClose(rec.Got[k][0].F32(), ref.Got[k][0].F32(), 1e-6); err != nil {
			t.Errorf("%s: rel diff %v from the full model", k, err)
		}
	}
	if err := enginetest.CheckClose(cut.Values.F32(), full.Values.F32(), 1e-6); err != nil {
		t.Errorf("logits rel diff %v from the full model", err)
	}
}

// vocabPad is the f32 bytes the embedding and the LM head gain on a rank
// from vLLM's vocabulary padding: 101 rows padded to 128 (a multiple of 64),
// 27 zero rows of hidden 96 each.
const vocabPad = 2 * 27 * 96 * 4

// TestDeepseekMemoryEstimate: at --tp 1 the estimate is every tensor's bytes
// (all f32 here) plus the vocabulary padding; a limit below it stops the load with ErrMemory and the
// per-rank estimate, before any weight is read.
func TestDeepseekMemoryEstimate(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 2, 0.05)
	var total int64
	for _, tt := range w {
		total += int64(len(tt.Data))
	}
	e := load(t, v3Config, &model.MapSource{Name: "v3", Tensors: w}, engine.Options{TP: 1})
	if e.Estimate[0] != total+vocabPad {
		t.Errorf("estimate %d, checkpoint has %d bytes (+%d of padding)", e.Estimate[0], total, vocabPad)
	}
	src := newCounting("v3", w)
	_, err := engine.LoadSource("test", []byte(v3Config), src, engine.Options{TP: 2, EP: true, MemoryLimit: total / 2})
	if !errors.Is(err, engine.ErrMemory) || !strings.Contains(err.Error(), "rank 0 ") || !strings.Contains(err.Error(), "rank 1 ") || !strings.Contains(err.Error(), "--load-layers") {
		t.Fatalf("err = %v", err)
	}
	if src.bytes.Load() != 0 {
		t.Errorf("a refused load read %d bytes", src.bytes.Load())
	}
}

// fp8Checkpoint quantizes, as DeepSeek-V3's release does, every attention
// projection and MLP/expert/shared-expert weight of w to float8_e4m3fn with
// one float32 scale per 32×32 block (amax/448), and returns the fp8
// checkpoint and the float32 weights those fp8 values and scales stand for.
func fp8Checkpoint(w map[string]*tensor.Tensor) (q, deq map[string]*tensor.Tensor, n int) {
	const B = 32
	re := regexp.MustCompile(`\.(self_attn\.(q_a_proj|q_b_proj|q_proj|kv_a_proj_with_mqa|kv_b_proj|o_proj)|mlp\.(experts\.\d+\.|shared_experts\.)?(gate_proj|up_proj|down_proj))\.weight$`)
	q, deq = map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for name, tt := range w {
		if !re.MatchString(name) {
			q[name], deq[name] = tt, tt
			continue
		}
		n++
		rows, cols := tt.Shape[0], tt.Shape[1]
		br, bc := (rows+B-1)/B, (cols+B-1)/B
		scale := make([]float32, br*bc)
		v := tt.F32()
		for i := range rows {
			for j := range cols {
				s := &scale[(i/B)*bc+j/B]
				*s = float32(math.Max(float64(*s), math.Abs(float64(v[i*cols+j]))/448))
			}
		}
		qt := &tensor.Tensor{DType: tensor.F8E4M3, Shape: []int{rows, cols}, Data: make([]byte, rows*cols)}
		dv := make([]float32, rows*cols)
		for i := range rows {
			for j := range cols {
				s := scale[(i/B)*bc+j/B]
				qt.Data[i*cols+j] = tensor.F32ToFP8E4M3(v[i*cols+j] / s)
				dv[i*cols+j] = tensor.FP8E4M3ToF32(qt.Data[i*cols+j]) * s
			}
		}
		q[name] = qt
		q[name+"_scale_inv"] = tensor.FromF32(scale, br, bc)
		deq[name] = tensor.FromF32(dv, rows, cols)
	}
	return q, deq, n
}

// TestDeepseekFP8: an fp8 checkpoint with 32×32 block scales (partial edge
// blocks: 56, 40, 36, 80 are not multiples of 32) gives the logits of its
// dequantized float32 weights at --tp 2, and the load report names every
// fp8 tensor (also under --ep). Without quantization_config the fp8 tensors are refused.
func TestDeepseekFP8(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 31, 0.05)
	q, deq, n := fp8Checkpoint(w)
	cfgQ := strings.Replace(v3Config, `"dtype":"float32"`, `"dtype":"float32","quantization_config":{"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[32,32]}`, 1)
	eq := load(t, cfgQ, &model.MapSource{Name: "fp8", Tensors: q}, engine.Options{TP: 2})
	lq, err := eq.Prefill(prompts, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := load(t, v3Config, &model.MapSource{Name: "deq", Tensors: deq}, engine.Options{TP: 2}).Prefill(prompts, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.CheckClose(lq.Values.F32(), ld.Values.F32(), 1e-6); err != nil {
		t.Errorf("fp8 vs dequantized logits rel diff %v", err)
	}
	if len(eq.Report.Dequantized) != n || n == 0 {
		t.Errorf("report lists %d dequantized tensors, the checkpoint has %d", len(eq.Report.Dequantized), n)
	}
	// Under --ep each rank dequantizes its own experts; the report is their union.
	if ep := load(t, cfgQ, &model.MapSource{Name: "fp8", Tensors: q}, engine.Options{TP: 2, EP: true}); len(ep.Report.Dequantized) != n {
		t.Errorf("--ep: report lists %d dequantized tensors, the checkpoint has %d", len(ep.Report.Dequantized), n)
	}
	_, err = engine.LoadSource("test", []byte(v3Config), &model.MapSource{Name: "fp8", Tensors: q}, engine.Options{TP: 1})
	if !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), "is fp8 but the config has no quantization_config") {
		t.Errorf("fp8 without quantization_config: err = %v", err)
	}
	delete(q, "model.layers.1.self_attn.kv_b_proj.weight_scale_inv")
	_, err = engine.LoadSource("test", []byte(cfgQ), &model.MapSource{Name: "fp8", Tensors: q}, engine.Options{TP: 1})
	if !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), "model.layers.1.self_attn.kv_b_proj.weight has no scale tensor model.layers.1.self_attn.kv_b_proj.weight_scale_inv") {
		t.Errorf("missing scale: err = %v", err)
	}
}

// listed is a MapSource that can list its tensors, as a safetensors set can.
type listed struct{ model.MapSource }

func (l *listed) Names() []string {
	var out []string
	for n := range l.Tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestDeepseekTextConfigWrapper: a Kimi-K2.5-style multimodal checkpoint
// (the language model's config in text_config with model_type kimi_k2, its
// tensors under language_model., a vision tower beside it, and a
// multi-token-prediction layer past num_hidden_layers) loads the language
// model only, gives the plain checkpoint's logits and reports what it left
// out.
func TestDeepseekTextConfigWrapper(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 41, 0.05)
	want, err := load(t, v3Config, &model.MapSource{Name: "plain", Tensors: w}, engine.Options{TP: 2}).Prefill(prompts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	inner := strings.Replace(strings.Replace(v3Config, `"architectures":["DeepseekV3ForCausalLM"],`, "", 1), `"model_type":"deepseek_v3"`, `"model_type":"kimi_k2"`, 1)
	cfg := `{"architectures":["KimiK25ForConditionalGeneration"],"model_type":"kimi_k25","vision_config":{"hidden_size":32},"text_config":` + inner + `}`
	wrapped := map[string]*tensor.Tensor{}
	for n, tt := range w {
		wrapped["language_model."+n] = tt
	}
	extra := []string{"language_model.model.layers.4.eh_proj.weight", "mm_projector.proj.weight", "vision_tower.patch_embed.weight"}
	for _, n := range extra {
		wrapped[n] = tensor.FromF32([]float32{1, 2}, 2)
	}
	e := load(t, cfg, &listed{model.MapSource{Name: "kimi", Tensors: wrapped}}, engine.Options{TP: 2})
	got, err := e.Prefill(prompts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.CheckClose(got.Values.F32(), want.Values.F32(), 0); err != nil {
		t.Errorf("wrapped checkpoint logits rel diff %v", err)
	}
	if e.Dims.Arch != "DeepseekV3ForCausalLM" || !strings.Contains(e.Skipped, "text_config") {
		t.Errorf("arch %s, skipped %q", e.Dims.Arch, e.Skipped)
	}
	if strings.Join(e.Report.Unused, " ") != strings.Join(extra, " ") {
		t.Errorf("unused %v, want %v", e.Report.Unused, extra)
	}
}

// TestDeepseekFusedExperts: transformers 5's fused expert tensors
// (experts.gate_up_proj [E, 2·I, H] with gate first, experts.down_proj [E, H,
// I]) give the per-expert checkpoint's logits, tensor- and expert-parallel.
func TestDeepseekFusedExperts(t *testing.T) {
	c := parseCfg(t, v3Config)
	w := randWeights(c, 51, 0.05)
	fused := map[string]*tensor.Tensor{}
	for n, tt := range w {
		if !strings.Contains(n, ".experts.") {
			fused[n] = tt
		}
	}
	H, I, E := c.Hidden, c.MoeInter, c.Experts
	for l := c.FirstDense; l < c.Layers; l++ {
		p := "model.layers." + itoa(l) + ".mlp.experts."
		gu := make([]float32, 0, E*2*I*H)
		down := make([]float32, 0, E*H*I)
		for e := range E {
			gu = append(gu, w[p+itoa(e)+".gate_proj.weight"].F32()...)
			gu = append(gu, w[p+itoa(e)+".up_proj.weight"].F32()...)
			down = append(down, w[p+itoa(e)+".down_proj.weight"].F32()...)
		}
		fused[p+"gate_up_proj"] = tensor.FromF32(gu, E, 2*I, H)
		fused[p+"down_proj"] = tensor.FromF32(down, E, H, I)
	}
	for _, o := range []engine.Options{{TP: 2}, {TP: 2, EP: true}} {
		want, err := load(t, v3Config, &model.MapSource{Name: "per-expert", Tensors: w}, o).Prefill(prompts, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := load(t, v3Config, &model.MapSource{Name: "fused", Tensors: fused}, o).Prefill(prompts, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.CheckClose(got.Values.F32(), want.Values.F32(), 0); err != nil {
			t.Errorf("%+v: fused vs per-expert logits rel diff %v", o, err)
		}
	}
}
