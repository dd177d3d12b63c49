package engine

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestPlanChecksStoredQuantized: `hsdb plan` with the weights present
// counted a malformed quantized weight at its planned size and said the
// checkpoint fits, while the load then refused it naming the tensor. The
// plan now makes the loader's checks of every quantized weight's stored
// tensors from their headers and fails with the load's error, by hand:
//
//   - testdata/hf/deepseek_v3_fp8 (fp8, weight_block_size [32, 32]): layer
//     1's expert 3 down_proj is [hidden 96, moe_intermediate 36], its
//     weight_scale_inv float32 [ceil(96/32), ceil(36/32)] = [3, 2].
//   - testdata/hf/kimi_k2_thinking (int4, group 32): layer 1's expert 0
//     gate_proj is [moe_intermediate 128, hidden 96], so its weight_shape
//     holds [128, 96].
//
// Each is refused by the plan (on a GPU, which keeps them quantized, and
// on the CPU, which dequantizes them) and by the load, with the same words.
func TestPlanChecksStoredQuantized(t *testing.T) {
	const fp8W = "model.layers.1.mlp.experts.3.down_proj.weight"
	const int4M = "model.layers.1.mlp.experts.0.gate_proj"
	for _, c := range []struct {
		name, fixture string
		edit          func(m map[string]*tensor.Tensor, order *[]string)
		want          string
	}{
		{"fp8 scale removed", "deepseek_v3_fp8", func(m map[string]*tensor.Tensor, _ *[]string) {
			delete(m, fp8W+"_scale_inv")
		}, "fp8 weight " + fp8W + " has no scale tensor " + fp8W + "_scale_inv in the checkpoint"},
		{"fp8 scale of the wrong shape", "deepseek_v3_fp8", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[fp8W+"_scale_inv"] = tensor.New(tensor.F32, 3, 3)
		}, fp8W + ": fp8_block weight [96, 36] with 32×32 blocks: scale is [3, 3], want [3, 2]"},
		{"fp8 scale of an integer dtype", "deepseek_v3_fp8", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[fp8W+"_scale_inv"] = tensor.New(tensor.I32, 3, 2)
		}, fp8W + ": fp8_block weight: scale dtype i32, want f32, bf16, f16 or f64"},
		{"int4 weight_shape other than the config's", "kimi_k2_thinking", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[int4M+".weight_shape"] = int32s(128, 104)
		}, int4M + ".weight_shape is [128, 104], the config implies [128, 96]"},
		{"int4 weight_shape of three integers", "kimi_k2_thinking", func(m map[string]*tensor.Tensor, _ *[]string) {
			m[int4M+".weight_shape"] = int32s(128, 96, 1)
		}, int4M + ".weight_shape is i32 [3], want i32 [2] = [out, in]"},
		{"int4 scale removed", "kimi_k2_thinking", func(m map[string]*tensor.Tensor, _ *[]string) {
			delete(m, int4M+".weight_scale")
		}, int4M + ".weight_packed has no scale tensor " + int4M + ".weight_scale in the checkpoint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := hostileCopy(t, c.fixture)
			hostileTensors(t, filepath.Join(dir, "model.safetensors"), c.edit)
			planAndLoadRefuse(t, dir, c.want)
		})
	}
}

// int32s is an I32 tensor of the values vs.
func int32s(vs ...int) *tensor.Tensor {
	x := tensor.New(tensor.I32, len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(x.Data[4*i:], uint32(v))
	}
	return x
}

// TestPlanStoredQuantizedPartial: a download whose index names a shard not
// here yet plans from config.json alone, with a note, as before: the
// headers of the shards present are not checked (Kimi-K2.5's fixture, its
// tensors under "language_model.", the experts in its second shard, the
// first removed). With both shards the same damage is refused, naming the
// tensor under the checkpoint's own prefix.
func TestPlanStoredQuantizedPartial(t *testing.T) {
	const m = "language_model.model.layers.1.mlp.experts.0.gate_proj"
	const s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	dir := hostileCopy(t, "kimi_k25")
	hostileTensors(t, filepath.Join(dir, s2), func(t map[string]*tensor.Tensor, _ *[]string) {
		t[m+".weight_shape"] = int32s(128, 104)
	})
	want := m + ".weight_shape is [128, 104], the config implies [128, 96]"
	if p, err := PlanDir(dir, PlanOptions{TP: 1}); p != nil || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("both shards: plan %v, %v\nwant an error containing %q", p != nil, err, want)
	}
	if err := os.Remove(filepath.Join(dir, s1)); err != nil {
		t.Fatal(err)
	}
	p, err := PlanDir(dir, PlanOptions{TP: 1})
	if err != nil {
		t.Fatalf("partial download: %v; want a plan from config.json", err)
	}
	if p.Checkpoint || len(p.Notes) == 0 || !strings.Contains(strings.Join(p.Notes, "\n"), s1) {
		t.Errorf("partial download: checkpoint %v, notes %q; want a plan from config.json with a note naming %s", p.Checkpoint, p.Notes, s1)
	}
}

// TestPlanKimiCheckpointBytes: the plan of the unmodified
// testdata/hf/kimi_k2_thinking is unchanged by the checks: at --tp 1 its
// weights are the bytes its safetensors header gives for every tensor plus
// vLLM's vocabulary padding (101 rows padded to 128: 27 rows of hidden 96
// in bf16, for embed_tokens and lm_head), and its quantized part the
// weight_packed, weight_scale and weight_shape tensors: 64 experts of
// 20760 bytes (engine/plan TestPlanInt4ScaleDType's hand count).
func TestPlanKimiCheckpointBytes(t *testing.T) {
	dir := "../testdata/hf/kimi_k2_thinking"
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var stored, packed int64
	for _, n := range f.Names() {
		ti, _ := f.Info(n)
		stored += ti.Bytes()
		if strings.HasSuffix(n, ".weight_packed") || strings.HasSuffix(n, ".weight_scale") || strings.HasSuffix(n, ".weight_shape") {
			packed += ti.Bytes()
		}
	}
	f.Close()
	if packed != 64*20760 {
		t.Fatalf("the fixture's packed tensors hold %d bytes, the hand count is %d", packed, 64*20760)
	}
	p, err := PlanDir(dir, PlanOptions{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Ranks[0]
	if want := stored + 2*27*96*2; r.Weights != want || r.QuantizedWeights != packed || !p.Checkpoint {
		t.Errorf("weights %d (quantized %d), the checkpoint holds %d (packed %d) + padding", r.Weights, r.QuantizedWeights, stored, packed)
	}
}

// planAndLoadRefuse checks that the checkpoint in dir is refused alike by
// the memory plan (a model.ErrWeight, on the default device and on the
// CPU) and by the load, each error containing want.
func planAndLoadRefuse(t *testing.T, dir, want string) {
	t.Helper()
	for _, dev := range []string{"", "cpu"} {
		p, err := PlanDir(dir, PlanOptions{TP: 1, Device: dev})
		if p != nil || err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, model.ErrWeight) {
			t.Errorf("plan --device %q: plan %v, %v\nwant a weight error containing %q", dev, p != nil, err, want)
		}
	}
	e, err := LoadDir(dir, Options{TP: 1})
	if err == nil {
		e.Close()
		t.Fatal("loaded")
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("load: %v\nwant an error containing %q", err, want)
	}
}
