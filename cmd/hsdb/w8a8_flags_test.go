package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestW8A8Flag: --w8a8 with --device cpu is refused as a contradiction
// (exit 2) in every command of the model group; a CPU load of an fp8
// checkpoint with it (the device left to default, no GPU here) fails
// naming why; `plan --w8a8` counts the fp8 copy of a linear's input and
// cuBLASLt's workspace (32 MiB) where the widened weight was: more
// activation bytes than without it, the same weights.
func TestW8A8Flag(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3_fp8"
	want := "--w8a8 and --device cpu contradict each other"
	for _, args := range [][]string{
		{"--model", model, "--device", "cpu", "--w8a8", "-x", os.DevNull},
		{"plan", "--model", model, "--device", "cpu", "--w8a8"},
		{"generate", "--model", model, "--device", "cpu", "--w8a8", "--ids", "1,2", "-n", "3"},
	} {
		if _, errs, code := runHsdb(t, args...); code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	// The device left to default lands on the CPU (no CUDA worker): a
	// usage error before anything is read, saying why and how to go on.
	noCUDAWorker(t)
	data := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(data, []byte(`{"input_ids": [0, 5, 17]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"generate", "--model", model, "--dtype", "bf16", "--w8a8", "--ids", "1,2", "-n", "3"},
		{"--model", model, "--dtype", "bf16", "--w8a8", "-x", os.DevNull},
		{"capture", "--model", model, "--dtype", "bf16", "--w8a8", "--layers", "0,1", "--data", data, "--out", t.TempDir() + "/d"},
	} {
		_, errs, code := runHsdb(t, args...)
		for _, w := range []string{"--w8a8 needs --device cuda", "--device defaulted to cpu", "leave --w8a8 out"} {
			if code != 2 || !strings.Contains(errs, w) {
				t.Errorf("%v without a GPU: exit %d, stderr %q; want exit 2 and %q", args, code, errs, w)
			}
		}
	}
	type rank struct {
		Weights     int64 `json:"weights_bytes"`
		Activations int64 `json:"activation_bytes"`
	}
	plans := map[bool]rank{}
	for _, w8 := range []bool{false, true} {
		args := []string{"plan", "--model", model, "--device", "cuda", "--dtype", "bf16", "--max-tokens", "64", "--json"}
		if w8 {
			args = append(args, "--w8a8")
		}
		out, errs, code := runHsdb(t, args...)
		var p struct {
			Ranks []rank
			W8A8  *bool `json:"w8a8"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Ranks) != 1 || p.W8A8 == nil || *p.W8A8 != w8 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		plans[w8] = p.Ranks[0]
	}
	if a, b := plans[false], plans[true]; a.Weights != b.Weights || b.Activations <= a.Activations || b.Activations > a.Activations+40<<20 {
		t.Errorf("plan without --w8a8 %+v, with %+v: want the same weights and up to 40 MiB more activations", a, b)
	}
}

// TestW8A8RuledOut: --w8a8 on a checkpoint it cannot apply to is refused
// as --ep on a dense model is, before any weight is read, exit 2, in the
// same words in plan and in the loading commands: a dense checkpoint, an
// int4 one (Kimi-K2.5's released config, Kimi-K2-Thinking's fixture) and an
// fp8 one whose activations would be f32. `plan --w8a8` planned each of
// them (exit 0, Kimi-K2.5's activations grown by cuBLASLt's workspace)
// while a load refused them; and the plan's text says --w8a8 was planned.
func TestW8A8RuledOut(t *testing.T) {
	noCUDAWorker(t)
	const hf = "../../testdata/hf/"
	for _, c := range []struct{ model, dtype, want string }{
		{"../../testdata/configs/kimi-k2.5", "", "--w8a8: the checkpoint has quantization_config compressed-tensors pack-quantized int4"},
		{hf + "kimi_k2_thinking", "", "--w8a8: the checkpoint has quantization_config compressed-tensors pack-quantized int4"},
		{hf + "deepseek_v3", "", "--w8a8: the checkpoint has no quantization_config"},
		{hf + "deepseek_v3_fp8", "", "takes bf16 activations (config.json's dtype gives f32 activations; add --dtype bf16)"},
		{hf + "deepseek_v3_fp8", "f16", "takes bf16 activations (--dtype f16 gives f16 activations; use --dtype bf16)"},
	} {
		cmds := [][]string{{"plan", "--model", c.model, "--w8a8"}, {"plan", "--model", c.model, "--w8a8", "--json"}}
		if !strings.Contains(c.model, "configs") { // a checkpoint: the loading commands too
			cmds = append(cmds, []string{"--model", c.model, "--w8a8", "-x", os.DevNull},
				[]string{"generate", "--model", c.model, "--w8a8", "--ids", "1,2", "-n", "2"})
		}
		for _, args := range cmds {
			if c.dtype != "" {
				args = append(args, "--dtype", c.dtype)
			}
			out, errs, code := runHsdb(t, args...)
			if code != 2 || !strings.Contains(out+errs, c.want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errs, c.want)
			}
		}
	}
	out, errs, code := runHsdb(t, "plan", "--model", "../../testdata/configs/deepseek-v3", "--tp", "8", "--w8a8")
	if code != 0 || !strings.Contains(out, "activations and KV cache bf16; --w8a8: the fp8 linears' inputs quantized to fp8") {
		t.Errorf("plan --w8a8 of DeepSeek-V3: exit %d, stderr %q, the plan does not say --w8a8:\n%s", code, errs, out)
	}
}
