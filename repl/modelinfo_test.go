package repl

import (
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// rewriteLlama copies the llama fixture (29 float32 tensors) to a new
// directory with every tensor converted by conv and the tensors of extra
// added.
func rewriteLlama(t *testing.T, conv tensor.DType, extra map[string]*tensor.Tensor) string {
	t.Helper()
	return enginetest.CopyHF(t, "../testdata/hf/llama", func(_ string, x *tensor.Tensor) *tensor.Tensor { return x.Convert(conv) }, extra)
}

// TestInfoModelDTypes: info model tells the checkpoint's dtype from the
// dtype the weights are kept in and the activations': a BF16 copy of the
// llama fixture's 29 tensors is stored and kept as bf16; the f32 fixture
// loaded with --dtype bf16 is stored f32, kept bf16; the FP8 fixture has
// 104 fp8 weights (its safetensors header) dequantized to f32, listed by
// info model --fp8.
func TestInfoModelDTypes(t *testing.T) {
	f := openFake(t, rewriteLlama(t, tensor.BF16, nil), engine.Options{})
	f.AssertExec("info model", "weights stored     bf16 29 tensors\n", "weights kept as    bf16 29 tensors\n", "activations        f32\n")

	o := engine.Options{DType: tensor.BF16}
	f = openFake(t, "../testdata/hf/llama", o)
	f.s.Options = o
	f.AssertExec("info model", "weights stored     f32 29 tensors\n", "weights kept as    bf16 29 tensors (--dtype bf16)\n")
	f.AssertExec("info model --fp8", "no tensor was stored as fp8")

	const fp8 = "../testdata/hf/deepseek_v3_fp8"
	h, err := safetensors.Open(fp8 + "/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var want []string
	for _, n := range h.Names() {
		if ti, _ := h.Info(n); ti.DType == tensor.F8E4M3 {
			want = append(want, n)
		}
	}
	f = openFake(t, fp8, engine.Options{})
	f.AssertExec("info model", "weights stored     fp8_e4m3 104 tensors, f32 25 tensors\n", "weights kept as    f32 129 tensors (fp8 dequantized to f32)\n",
		"104 tensors were stored as fp8 and dequantized on load")
	out := f.AssertExec("info model --fp8", "104 tensors were stored as fp8 (e4m3 with block scales) and dequantized on load:\n")
	listed := expandListed(t, strings.Split(strings.SplitN(out, "\n", 2)[1], "\n"), "tensors")
	if len(listed) != len(want) || len(want) != 104 {
		t.Fatalf("listed %d fp8 tensors, the header has %d", len(listed), len(want))
	}
	inHeader := map[string]bool{}
	for _, n := range want {
		inHeader[n] = true
	}
	for _, n := range listed {
		if !inHeader[n] {
			t.Fatalf("%s listed as fp8 but stored otherwise", n)
		}
	}
	w := f.jsonExec("info model")[0]["result"].(map[string]any)["weights"].(map[string]any)
	if w["fp8_dequantized"].(float64) != 104 || len(w["unused_tensors"].([]any)) != 0 {
		t.Fatalf("JSON weights %v", w)
	}
}

// TestInfoModelWarnsUnusedTensors: a checkpoint with a tensor no module
// reads shows it as a warning in info model and in info model --unused.
func TestInfoModelWarnsUnusedTensors(t *testing.T) {
	dir := rewriteLlama(t, tensor.F32, map[string]*tensor.Tensor{"model.vision_tower.proj.weight": tensor.FromF32([]float32{1, 2}, 2)})
	f := openFake(t, dir, engine.Options{})
	f.AssertExec("info model", "unused tensors     warning: 1 checkpoint tensor is not used by LlamaForCausalLM: model.vision_tower.proj.weight\n")
	f.AssertExec("info model --unused", "1 checkpoint tensor is not used by the model:\n  model.vision_tower.proj.weight")
	f = openFake(t, "../testdata/hf/llama", engine.Options{})
	if out := f.Exec("info model"); strings.Contains(out, "unused") {
		t.Fatalf("clean checkpoint warns:\n%s", out)
	}
}

// TestInfoModelKimi: info model on the Kimi-K2.5 fixture (a multimodal
// wrapper whose routed experts are compressed-tensors int4) says the
// language model alone was loaded from text_config, names the four vision
// tensors it did not read, and counts the 192 int4 weights (the fixture
// generator quantized 2 layers × 32 experts × 3 projections) by the scheme
// that read them, dequantized on the CPU.
func TestInfoModelKimi(t *testing.T) {
	f := openFake(t, "../testdata/hf/kimi_k25", engine.Options{})
	f.AssertExec("info model",
		"weights stored     bf16 41 tensors, f32 2 tensors, int4 (packed) 192 tensors\n",
		"192 linear weights stored as compressed-tensors pack-quantized int4 symmetric, group 32 (W4A16), dequantized on load",
		"not loaded         [KimiK25ForConditionalGeneration] (model_type \"kimi_k25\") wraps the language model in text_config; only it is loaded (the vision_config model's tensors are not read)",
		"4 checkpoint tensors are not used by DeepseekV3ForCausalLM: mm_projector.pre_norm.weight, mm_projector.proj.0.weight, vision_tower.encoder.blocks.0.wqkv.weight, vision_tower.patch_embed.proj.weight")
	f.AssertExec("info model --fp8", "no tensor was stored as fp8 (192 other quantized weights: `info model --quantized` lists them)")
}

// TestInfoModelQuantized: info model --quantized lists every quantized
// weight with its format, --fp8 only the fp8 ones. The reference is each
// checkpoint's safetensors headers: the Kimi-K2.5 fixture's 192 I32
// "<weight>_packed" tensors are int4 group weights and none is fp8; the
// DeepSeek-V3 fp8 fixture's 104 F8E4M3 tensors are fp8 block weights.
func TestInfoModelQuantized(t *testing.T) {
	headerNames := func(files []string, keep func(name string, dt tensor.DType) (string, bool)) map[string]bool {
		m := map[string]bool{}
		for _, p := range files {
			h, err := safetensors.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range h.Names() {
				ti, _ := h.Info(n)
				if w, ok := keep(n, ti.DType); ok {
					m[w] = true
				}
			}
			h.Close()
		}
		return m
	}
	check := func(out string, want map[string]bool, format string) {
		t.Helper()
		lines := strings.Split(out, "\n")[1:]
		got := 0
		for _, l := range lines {
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			f, pattern, ok := strings.Cut(l, "  ")
			if !ok || f != format {
				t.Fatalf("line %q: want %q", l, format)
			}
			for _, name := range expandListed(t, []string{pattern}, "weights") {
				if !want[name] {
					t.Fatalf("line %q: %s is not a weight of the header's %d", l, name, len(want))
				}
				got++
			}
		}
		if got != len(want) || got == 0 {
			t.Fatalf("listed %d weights, the header has %d", got, len(want))
		}
	}
	const kimi = "../testdata/hf/kimi_k25"
	int4 := headerNames([]string{kimi + "/model-00001-of-00002.safetensors", kimi + "/model-00002-of-00002.safetensors"},
		func(n string, dt tensor.DType) (string, bool) {
			w, ok := strings.CutSuffix(n, "_packed")
			return w, ok && dt == tensor.I32
		})
	if len(int4) != 192 {
		t.Fatalf("the Kimi fixture's header has %d packed weights, its generator wrote 192", len(int4))
	}
	f := openFake(t, kimi, engine.Options{})
	check(f.AssertExec("info model --quantized", "192 linear weights were stored quantized (compressed-tensors pack-quantized int4 symmetric, group 32 (W4A16)):\n"), int4, "int4 group")

	const fp8 = "../testdata/hf/deepseek_v3_fp8"
	f8 := headerNames([]string{fp8 + "/model.safetensors"}, func(n string, dt tensor.DType) (string, bool) { return n, dt == tensor.F8E4M3 })
	f = openFake(t, fp8, engine.Options{})
	check(f.AssertExec("info model --quantized", "104 linear weights were stored quantized (fp8 e4m3, "), f8, "fp8 block")
	out := f.AssertExec("info model --fp8", "104 tensors were stored as fp8")
	if n := len(expandListed(t, strings.Split(strings.SplitN(out, "\n", 2)[1], "\n"), "tensors")); n != len(f8) {
		t.Fatalf("--fp8 listed %d, the header has %d fp8 tensors", n, len(f8))
	}
}
