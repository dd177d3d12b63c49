package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/quant"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestPlanRefusesMissingWeights: `hsdb plan` with the checkpoint's tensor
// headers present said "fits: yes" for a checkpoint the load refused at
// once because a weight was not in it at all: testdata/hf/deepseek_v3_fp8
// without model.norm.weight planned, and without the fp8
// model.layers.0.mlp.down_proj.weight (its weight_scale_inv left) planned
// that weight as a dense float32 one. The plan now refuses a parameter
// the checkpoint holds in no form, with the load's words, the name the
// loader asks for and the shape the config implies, by hand:
//
//   - deepseek_v3_fp8 (hidden 96, intermediate 160): model.norm.weight is
//     [96]; layer 0 (dense) down_proj is [hidden, intermediate] = [96, 160].
//   - llama (hidden 96, 8 heads of head_dim 12, 2 kv heads):
//     model.layers.1.input_layernorm.weight [96]; k_proj [2·12, 96] = [24, 96].
//   - kimi_k25 (its language model under "language_model.", sharded):
//     the final norm, asked for as language_model.model.norm.weight [96].
//   - kimi_k2_thinking (compressed-tensors int4, group_0 quantizing the
//     routed experts): expert 0 of layer 1's gate_proj with none of its
//     tensors is refused by the scheme, as Loader.Linear asks it first.
func TestPlanRefusesMissingWeights(t *testing.T) {
	const int4M = "model.layers.1.mlp.experts.0.gate_proj"
	for _, c := range []struct {
		name, fixture, file string
		drop                []string
		want                string
	}{
		{"final norm", "deepseek_v3_fp8", "model.safetensors", []string{"model.norm.weight"},
			"tensor model.norm.weight is missing from the checkpoint (expected shape [96])"},
		{"fp8 weight without its data, its scale left", "deepseek_v3_fp8", "model.safetensors", []string{"model.layers.0.mlp.down_proj.weight"},
			"tensor model.layers.0.mlp.down_proj.weight is missing from the checkpoint (expected shape [96, 160])"},
		{"fp8 weight and its scale", "deepseek_v3_fp8", "model.safetensors", []string{"model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.weight_scale_inv"},
			"tensor model.layers.0.mlp.down_proj.weight is missing from the checkpoint (expected shape [96, 160])"},
		{"dense norm", "llama", "model.safetensors", []string{"model.layers.1.input_layernorm.weight"},
			"tensor model.layers.1.input_layernorm.weight is missing from the checkpoint (expected shape [96])"},
		{"dense linear", "llama", "model.safetensors", []string{"model.layers.2.self_attn.k_proj.weight"},
			"tensor model.layers.2.self_attn.k_proj.weight is missing from the checkpoint (expected shape [24, 96])"},
		{"wrapper layout", "kimi_k25", "model-00002-of-00002.safetensors", []string{"language_model.model.norm.weight"},
			"tensor language_model.model.norm.weight is missing from the checkpoint (expected shape [96])"},
		{"int4 weight with none of its tensors", "kimi_k2_thinking", "model.safetensors",
			[]string{int4M + ".weight_packed", int4M + ".weight_scale", int4M + ".weight_shape"},
			int4M + ".weight: quantization_config (group_0) quantizes module " + int4M + " but the checkpoint has neither " + int4M + ".weight_packed nor " + int4M + ".weight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := hostileCopy(t, c.fixture)
			hostileTensors(t, filepath.Join(dir, c.file), func(m map[string]*tensor.Tensor, _ *[]string) {
				for _, n := range c.drop {
					if m[n] == nil {
						t.Fatalf("the fixture has no %s", n)
					}
					delete(m, n)
				}
			})
			if strings.HasPrefix(c.file, "model-") {
				dropFromIndex(t, dir, c.drop)
			}
			planAndLoadRefuse(t, dir, c.want)
			loaderRefuses(t, dir, c.want)
		})
	}
}

// loaderRefuses checks that model.Loader itself, reading rank 0 of 1 of
// the checkpoint in dir onto the CPU backend without the memory plan
// LoadSource runs first (whose checks are the plan's own), refuses it with
// an error containing want: the plan's words are the loader's, not only
// the plan's twice.
func loaderRefuses(t *testing.T, dir, want string) {
	t.Helper()
	cfgJSON, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, tree, err := buildTree(cfgJSON, 1, Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := quant.FromConfig(cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	l := model.NewLoader(stSource{set}, cpu.New(0), 0, 1, tensor.Invalid)
	l.Quant, l.Detach = qs, safetensors.Detach
	_, err = loadRank(cfg, l, tree)
	if err == nil || !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), want) {
		t.Errorf("the loader: %v\nwant a weight error containing %q", err, want)
	}
}

// dropFromIndex removes names from the weight_map of dir's
// model.safetensors.index.json, as a checkpoint written without them has.
func dropFromIndex(t *testing.T, dir string, names []string) {
	t.Helper()
	hostileJSON(t, filepath.Join(dir, "model.safetensors.index.json"), func(m map[string]any) {
		wm, _ := m["weight_map"].(map[string]any)
		for _, n := range names {
			if _, ok := wm[n]; !ok {
				t.Fatalf("the index has no %s", n)
			}
			delete(wm, n)
		}
	})
}

// TestPlanMissingWeightStage: with --pp, a stage plans only the weights it
// loads (model.StageEnds): the final norm missing from
// testdata/hf/llama (3 decoder layers) refuses the last stage's plan,
// naming it, while the first stage (layers 0-1, the embeddings, no final
// norm) plans.
func TestPlanMissingWeightStage(t *testing.T) {
	dir := hostileCopy(t, "llama")
	hostileTensors(t, filepath.Join(dir, "model.safetensors"), func(m map[string]*tensor.Tensor, _ *[]string) {
		delete(m, "model.norm.weight")
	})
	first := model.LayerRange{First: 0, Last: 1}
	if _, err := PlanDir(dir, PlanOptions{TP: 1, Layers: &first, Stage: &model.StageEnds{First: true}}); err != nil {
		t.Errorf("first stage: %v; it does not hold the final norm", err)
	}
	last := model.LayerRange{First: 2, Last: 2}
	_, err := PlanDir(dir, PlanOptions{TP: 1, Layers: &last, Stage: &model.StageEnds{Last: true}})
	const want = "tensor model.norm.weight is missing from the checkpoint (expected shape [96])"
	if err == nil || !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), want) {
		t.Errorf("last stage: %v\nwant a weight error containing %q", err, want)
	}
}

// TestPlanFusedExpertsHeld: routed experts saved fused by transformers 5
// (mlp.experts.gate_up_proj [experts, 2·I, hidden], mlp.experts.down_proj
// [experts, hidden, I]: fuseExperts) hold every expert's weights, which
// the loader reads through them; the plan takes them as held, as before.
// Without layer 2's fused down_proj, expert 0's down_proj of layer 2 is
// missing (deepseek_v3: hidden 96, moe_intermediate 36, so [96, 36]), and
// plan and load refuse it alike.
func TestPlanFusedExpertsHeld(t *testing.T) {
	dir := hostileCopy(t, "deepseek_v3")
	fuseExperts(t, dir, 0)
	if _, err := PlanDir(dir, PlanOptions{TP: 1}); err != nil {
		t.Fatalf("fused experts: %v", err)
	}
	hostileTensors(t, filepath.Join(dir, "model.safetensors"), func(m map[string]*tensor.Tensor, _ *[]string) {
		delete(m, "model.layers.2.mlp.experts.down_proj")
	})
	const want = "tensor model.layers.2.mlp.experts.0.down_proj.weight is missing from the checkpoint (expected shape [96, 36])"
	planAndLoadRefuse(t, dir, want)
	loaderRefuses(t, dir, want)
}

// TestPlanFusedExpertsOdd: a fused gate_up_proj whose rows do not halve
// ([8, 73, 96] for deepseek_v3's 8 experts of 2 × 36 rows, one row
// added) gives no gate and up halves: the load refused it while the plan,
// reading 73 / 2 = 36 rows, said it fits. Both now refuse it naming the
// fused tensor and its shape, in the loader's words; so is one with fewer
// experts than the config's 8 ([4, 72, 96]: expert 4 is not there),
// where the plan named a per-expert tensor the file never had.
func TestPlanFusedExpertsOdd(t *testing.T) {
	const gu = "model.layers.2.mlp.experts.gate_up_proj"
	for _, c := range []struct {
		shape []int
		want  string
	}{
		{[]int{8, 73, 96}, gu + " (for model.layers.2.mlp.experts.0.gate_proj.weight): fused expert tensor of shape [8, 73, 96]: gate_up_proj needs an even number of rows (gate and up halves of 2·moe_intermediate_size), got 73"},
		{[]int{4, 72, 96}, gu + " (for model.layers.2.mlp.experts.4.gate_proj.weight): fused expert tensor of shape [4, 72, 96] has no expert 4"},
	} {
		dir := hostileCopy(t, "deepseek_v3")
		fuseExperts(t, dir, 0)
		hostileTensors(t, filepath.Join(dir, "model.safetensors"), func(m map[string]*tensor.Tensor, _ *[]string) {
			m[gu] = tensor.New(tensor.F32, c.shape...)
		})
		planAndLoadRefuse(t, dir, c.want)
	}
}

// TestFusedExpertsNotUnused: a checkpoint with its routed experts fused
// (fuseExperts: gate_up_proj and down_proj per MoE layer) loads, and those tensors, which the loader slices, were
// reported "not used" (HF's warning) since no parameter has their names.
func TestFusedExpertsNotUnused(t *testing.T) {
	dir := hostileCopy(t, "deepseek_v3")
	fuseExperts(t, dir, 0)
	e, err := Open(dir, Options{TP: 1, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(e.Report.Unused) != 0 {
		t.Errorf("unused %q, want none", e.Report.Unused)
	}
}
