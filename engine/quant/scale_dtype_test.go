package quant

import (
	"testing"

	"hsdb/engine/tensor"
)

// TestInt4ScaleDTypeNamesWhatIsAccepted: an int4 group scale stored fp8
// or integer is refused naming the dtypes a scale may have ("want f32,
// bf16, f16 or f64"); "want a float dtype" contradicted itself for fp8,
// which is one. A float32 scale loads.
func TestInt4ScaleDTypeNamesWhatIsAccepted(t *testing.T) {
	c := mustParse(t, group8)
	for _, tc := range []struct {
		dt   tensor.DType
		want string // "" loads
	}{
		{tensor.F8E4M3, "model.layers.1.mlp.experts.0.down_proj.weight_packed / model.layers.1.mlp.experts.0.down_proj.weight_scale (group_size 8): int4_group weight: scale dtype fp8_e4m3, want f32, bf16, f16 or f64"},
		{tensor.I32, "model.layers.1.mlp.experts.0.down_proj.weight_packed / model.layers.1.mlp.experts.0.down_proj.weight_scale (group_size 8): int4_group weight: scale dtype i32, want f32, bf16, f16 or f64"},
		{tensor.F32, ""},
	} {
		src, mod := expertSource(t)
		src.Tensors[mod+".weight_scale"] = tensor.New(tc.dt, 2, 2)
		_, err := c.Load(src, mod+".weight", 2, 16)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s scale: %v, want it loaded", tc.dt, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s scale: err = %v\nwant %q", tc.dt, err, tc.want)
		}
	}
}
