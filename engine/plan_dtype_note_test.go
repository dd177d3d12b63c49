package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/plan"
	"hsdb/engine/tensor"
)

// TestPlanDTypeKeptQuantizedNote: `hsdb plan --dtype bf16` of DeepSeek-V3
// as released (fp8) printed the plan it printed without --dtype, silently:
// on a GPU the fp8 weights stay at their stored size whatever --dtype says
// (--dtype converts the dense weights and is the activations' dtype). The
// plan now says so in its notes, and how to plan the model in bf16; the
// same for Kimi-K2.5's int4 experts. No note without --dtype, for a dense
// checkpoint (testdata/hf/llama) or on the CPU, which dequantizes the
// quantized weights to --dtype (its refusal says what dequantizing costs).
func TestPlanDTypeKeptQuantizedNote(t *testing.T) {
	const configs = "../testdata/configs"
	note := func(dt, scheme string) string {
		return "--dtype " + dt + " converts the dense weights and sets the activations and KV cache; the quantized weights (" + scheme +
			") stay at their stored size on the GPU, as the CUDA backend keeps them: to plan the model in " + dt +
			" throughout, plan its config.json without quantization_config (a dense " + dt + " checkpoint; the load refuses quantized tensors without it)"
	}
	for _, c := range []struct {
		name, dir string
		o         PlanOptions
		want      []string
	}{
		{"deepseek-v3 --dtype bf16", filepath.Join(configs, "deepseek-v3"), PlanOptions{TP: 8, DType: tensor.BF16, Tokens: 4096}, []string{note("bf16", "fp8 e4m3, 128×128 blocks")}},
		{"deepseek-v3 --dtype f32", filepath.Join(configs, "deepseek-v3"), PlanOptions{TP: 8, DType: tensor.F32, Tokens: 4096}, []string{note("f32", "fp8 e4m3, 128×128 blocks")}},
		{"kimi-k2.5 --dtype bf16", filepath.Join(configs, "kimi-k2.5"), PlanOptions{TP: 8, DType: tensor.BF16, Tokens: 4096},
			[]string{note("bf16", "compressed-tensors pack-quantized int4 symmetric, group 32 (W4A16)")}},
		{"deepseek-v3 without --dtype", filepath.Join(configs, "deepseek-v3"), PlanOptions{TP: 8, Tokens: 4096}, nil},
		{"deepseek-v3 --dtype bf16 --device cpu", filepath.Join(configs, "deepseek-v3"), PlanOptions{TP: 8, DType: tensor.BF16, Tokens: 4096, Device: "cpu"}, nil},
		{"dense llama --dtype bf16", "../testdata/hf/llama", PlanOptions{TP: 1, DType: tensor.BF16}, nil},
	} {
		p, err := PlanDir(c.dir, c.o)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if strings.Join(p.Notes, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s: notes %q\nwant %q", c.name, p.Notes, c.want)
		}
	}
}

// TestPlanCPUAdvice: DeepSeek-V3 at --tp 8 on the CPU backend against a
// host of 2 TiB does not fit; the refusal advised "use more devices",
// which means nothing when every rank shares the host. It now names a
// machine with more memory and that the fp8 weights are dequantized on
// load to float32, 4 bytes a parameter, which --dtype bf16 halves.
func TestPlanCPUAdvice(t *testing.T) {
	p, err := PlanDir("../testdata/configs/deepseek-v3", PlanOptions{TP: 8, Tokens: 4096, Device: "cpu", DeviceBytes: 2 << 40})
	if err != nil {
		t.Fatal(err)
	}
	const want = "; " + plan.HostFitAdvice + "; the CPU backend dequantizes the quantized weights (fp8 e4m3, 128×128 blocks) on load to f32, 4 bytes a parameter: --dtype bf16 keeps them in 2, and GPUs (--device cuda) keep them as stored"
	err = p.Check()
	if p.Fits || err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "more devices") {
		t.Errorf("fits %v: %v\nwant a refusal ending %q", p.Fits, err, want)
	}
}
