package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSafetensors writes tensors (name → shape, float32 zeros) to path
// as the format lays it out: the header's length as 8 little-endian
// bytes, the JSON header (dtype, shape, data_offsets [begin, end) into
// the data), then the data, tensor after tensor in names' order.
func writeSafetensors(t *testing.T, path string, names []string, shapes map[string][]int) {
	t.Helper()
	header := map[string]any{}
	off := 0
	for _, n := range names {
		size := 4
		for _, d := range shapes[n] {
			size *= d
		}
		header[n] = map[string]any{"dtype": "F32", "shape": shapes[n], "data_offsets": []int{off, off + size}}
		off += size
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(append(b, h...), make([]byte, off)...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// llamaTensors are the tensors of testdata/hf/llama's config (hidden 96,
// 8 heads of head_dim 12, 2 kv heads, intermediate 160, 3 layers,
// vocabulary 101, tied embeddings: no lm_head), in load order, with their
// shapes: q and o [8·12, 96] = [96, 96], k and v [2·12, 96] = [24, 96],
// gate and up [160, 96], down [96, 160].
func llamaTensors() ([]string, map[string][]int) {
	shapes := map[string][]int{"model.embed_tokens.weight": {101, 96}}
	names := []string{"model.embed_tokens.weight"}
	for l := range 3 {
		for _, x := range []struct {
			n     string
			shape []int
		}{{"input_layernorm", []int{96}}, {"self_attn.q_proj", []int{96, 96}}, {"self_attn.k_proj", []int{24, 96}}, {"self_attn.v_proj", []int{24, 96}},
			{"self_attn.o_proj", []int{96, 96}}, {"post_attention_layernorm", []int{96}}, {"mlp.gate_proj", []int{160, 96}}, {"mlp.up_proj", []int{160, 96}},
			{"mlp.down_proj", []int{96, 160}}} {
			n := fmt.Sprintf("model.layers.%d.%s.weight", l, x.n)
			names, shapes[n] = append(names, n), x.shape
		}
	}
	names, shapes["model.norm.weight"] = append(names, "model.norm.weight"), []int{96}
	return names, shapes
}

// TestPlanMissingWeightCLI: `hsdb plan` with a checkpoint whose headers it
// reads said "fits: yes" (exit 0, "from config.json and the checkpoint's
// tensor headers") for a checkpoint without model.norm.weight, which the
// load refuses at once. The checkpoint written here with every tensor of
// testdata/hf/llama's config plans; without the final norm plan fails as
// other bad input does (exit 1, one line on stderr; with --json the error
// object on stdout) with the load's words: the tensor and the shape the
// config implies, [hidden 96].
func TestPlanMissingWeightCLI(t *testing.T) {
	cfg, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	names, shapes := llamaTensors()
	for _, c := range []struct {
		name string
		drop string
	}{{"complete", ""}, {"without model.norm.weight", "model.norm.weight"}} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, n := range names {
			if n != c.drop {
				keep = append(keep, n)
			}
		}
		writeSafetensors(t, filepath.Join(dir, "model.safetensors"), keep, shapes)
		out, errs, code := runHsdb(t, "plan", "--model", dir)
		if c.drop == "" {
			if code != 0 || !strings.Contains(out, "from config.json and the checkpoint's tensor headers") {
				t.Errorf("%s: exit %d (stderr %q)\n%s", c.name, code, errs, out)
			}
			continue
		}
		msg := "--model " + dir + ": weight: tensor model.norm.weight is missing from the checkpoint (expected shape [96])"
		if code != 1 || out != "" || errs != "hsdb plan: "+msg+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit 1 and hsdb plan: %s", c.name, code, out, errs, msg)
		}
		out, _, code = runHsdb(t, "plan", "--model", dir, "--json")
		var j struct {
			Command, Error string
			Exit           int
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil || code != 1 || j.Command != "plan" || j.Error != msg || j.Exit != 1 {
			t.Errorf("%s --json: exit %d, %q (%v)\nwant the error %q", c.name, code, out, err, msg)
		}
	}
}

// TestPlanTPTreeSizeUsage: --tp 4096 on a Llama config of 4096 layers (and
// 4096 heads, which 4096 ranks split) makes 4096 × (0 + 1) × 4096 =
// 16777216 parameter shards, over hsdb's 2²² = 4194304; plan named
// num_hidden_layers as a config.json bound and exited 1. The fault is the
// flag's: a usage error (exit 2) naming --tp and the largest world size,
// 4194304 / 4096 = 1024, which plans.
func TestPlanTPTreeSizeUsage(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "configs", "llama-4096-layers") // config.json alone
	want := "hsdb plan: " + dir + ": --tp 4096: num_hidden_layers 4096 × (n_routed_experts 0 + 1) × world size 4096 is 16777216 parameter shards, more than hsdb plans (4194304); the world size must be at most 1024 for this model\n"
	if out, errs, code := runHsdb(t, "plan", "--model", dir, "--tp", "4096"); code != 2 || errs != want {
		t.Errorf("--tp 4096: exit %d, stderr %q\nwant exit 2, %q\n%s", code, errs, want, out)
	}
	if _, errs, code := runHsdb(t, "plan", "--model", dir, "--tp", "1024", "--max-tokens", "0"); code != 0 {
		t.Errorf("--tp 1024: exit %d, %s", code, errs)
	}
}

// TestPlanDTypeNoteCLI: `hsdb plan --dtype bf16` of DeepSeek-V3 as
// released printed exactly what it printed without --dtype; the text now
// has a note line saying the fp8 weights stay as stored on the GPU and how
// to plan the model in bf16, and --json the same in notes.
func TestPlanDTypeNoteCLI(t *testing.T) {
	const dir = "../../testdata/configs/deepseek-v3"
	const note = "--dtype bf16 converts the dense weights and sets the activations and KV cache; the quantized weights (fp8 e4m3, 128×128 blocks) stay at their stored size on the GPU, as the CUDA backend keeps them: to plan the model in bf16 throughout, plan its config.json without quantization_config (a dense bf16 checkpoint; the load refuses quantized tensors without it)"
	out, errs, code := runHsdb(t, "plan", "--model", dir, "--tp", "8", "--dtype", "bf16")
	if code != 0 || !strings.Contains(out, "\nnote: "+note+"\n") {
		t.Errorf("text: exit %d (stderr %q)\n%s", code, errs, out)
	}
	out, errs, code = runHsdb(t, "plan", "--model", dir, "--tp", "8")
	if code != 0 || strings.Contains(out, "note: ") {
		t.Errorf("without --dtype: exit %d (stderr %q), want no note\n%s", code, errs, out)
	}
	out, _, code = runHsdb(t, "plan", "--model", dir, "--tp", "8", "--dtype", "bf16", "--json")
	var j struct {
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 || len(j.Notes) != 1 || j.Notes[0] != note {
		t.Errorf("--json: exit %d, notes %q (%v)", code, j.Notes, err)
	}
}

// TestPlanCPUAdviceCLI: DeepSeek-V3 at --tp 8 --device cpu against a 2 TiB
// host does not fit, and the refusal said "or use more devices", which
// means nothing for ranks sharing one host. It now advises fewer layers or
// a machine with more memory, and says the CPU backend dequantizes the fp8
// weights on load to float32. Each stage of a --pp plan on the CPU, where
// --load-layers is refused, advises more stages on hosts of their own or
// more memory (testdata/hf/llama, 2 stages of --tp 2 in 10 MiB: each
// stage's two ranks hold more, mostly 4096 tokens' float32 activations).
func TestPlanCPUAdviceCLI(t *testing.T) {
	out, errs, code := runHsdb(t, "plan", "--model", "../../testdata/configs/deepseek-v3", "--tp", "8", "--device", "cpu", "--device-memory", "2TiB")
	const advice = "; load fewer decoder layers with --load-layers A-B or use a machine with more memory (the ranks share this host's: more ranks on it add none; ranks on hosts of their own, hsdb --listen, need only their own); the CPU backend dequantizes the quantized weights (fp8 e4m3, 128×128 blocks) on load to f32, 4 bytes a parameter: --dtype bf16 keeps them in 2, and GPUs (--device cuda) keep them as stored\n"
	if code != 1 || !strings.Contains(out, "fits: no, the 8 ranks sharing the host") || !strings.Contains(out, advice) || strings.Contains(out, "more devices") {
		t.Errorf("--device cpu: exit %d (stderr %q)\n%s", code, errs, out)
	}
	out, errs, code = runHsdb(t, "plan", "--model", "../../testdata/hf/llama", "--tp", "2", "--pp", "2", "--device", "cpu", "--device-memory", "10MiB")
	const stage = "use more pipeline stages (--pp), each on a host of its own (hsdb --listen), or a machine with more memory (a stage's ranks share its host's: more ranks on it add none)\n"
	if code != 1 || strings.Count(out, stage) != 2 || strings.Contains(out, "--load-layers") || strings.Contains(out, "more devices") {
		t.Errorf("--pp 2 --device cpu: exit %d (stderr %q)\n%s", code, errs, out)
	}
}
