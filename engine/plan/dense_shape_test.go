package plan_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/plan"
	"hsdb/engine/tensor"
)

// TestPlanDenseShapeChecked: a linear weight stored dense with another
// shape than config.json implies is refused by the plan as the load
// refuses it ("tensor ... has shape [96, 40] in the checkpoint, the
// config implies [96, 96]"), with a quantization scheme or without;
// before, the plan counted the config's shape and said it fits.
// testdata/hf/llama: hidden 96, 8 heads of 12, so o_proj is [96, 96].
func TestPlanDenseShapeChecked(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, d := tree(t, string(raw), 1, false)
	const bad = "model.layers.1.self_attn.o_proj.weight"
	for _, q := range []model.QuantScheme{nil, blockQuant{}} {
		src := &model.MapSource{Name: "ckpt", Tensors: map[string]*tensor.Tensor{}}
		for _, p := range tr.Params() {
			src.Tensors[p.Name] = tensor.New(tensor.BF16, p.Shape...)
		}
		if _, err := plan.New(tr, d, plan.Options{World: 1, Quant: q, Src: src}); err != nil {
			t.Fatalf("quant %v: the checkpoint of the config's shapes: %v", q, err)
		}
		src.Tensors[bad] = tensor.New(tensor.BF16, 96, 40)
		_, err := plan.New(tr, d, plan.Options{World: 1, Quant: q, Src: src})
		want := "tensor " + bad + " has shape [96, 40] in the checkpoint, the config implies [96, 96]"
		if !errors.Is(err, model.ErrWeight) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("quant %v: %v\nwant model.ErrWeight: %s", q, err, want)
		}
	}
}
