package quant

import (
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TestWeightShapeWrongFormSaysValues: a compressed-tensors weight_shape
// of the wrong dtype or shape is refused naming the values it must hold
// ([out, in] of the config: here [128, 96]) and both integer dtypes read;
// it said "want i32 [2] = [out, in]", leaving the reader to work out out
// and in, while an i64 [2] (what torch.tensor(shape) gives) is read too.
func TestWeightShapeWrongFormSaysValues(t *testing.T) {
	const n = "m.weight_shape"
	for _, x := range []*tensor.Tensor{tensor.New(tensor.F32, 2), tensor.New(tensor.I32, 3), tensor.New(tensor.I64, 1, 2)} {
		src := &model.MapSource{Name: "ckpt", Tensors: map[string]*tensor.Tensor{n: x}}
		err := checkWeightShape(src, n, 128, 96)
		want := n + " is " + x.DType.String() + " " + tensor.ShapeString(x.Shape) + ", want i32 [2] = [out, in] = [128, 96] (or i64 [2])"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s %v: %v\nwant %q", x.DType, x.Shape, err, want)
		}
	}
}
