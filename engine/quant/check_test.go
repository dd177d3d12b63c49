package quant

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// headerSource serves a MapSource's headers (Meta) and refuses to read any
// tensor's data but those allowed, counting the reads.
type headerSource struct {
	*model.MapSource
	allow func(name string) bool
	reads []string
}

func (s *headerSource) Tensor(name string) (*tensor.Tensor, error) {
	if !s.allow(name) {
		return nil, fmt.Errorf("headerSource: %s's data read", name)
	}
	s.reads = append(s.reads, name)
	return s.MapSource.Tensor(name)
}

// TestCheckIsLoadFromHeaders: Check returns exactly the error Load returns
// for every malformed stored weight the headers (and compressed-tensors'
// 2-integer weight_shape) decide, reading no other tensor's data; nil for a
// well-formed or a dense weight; nil for a NaN scale, which only the data
// shows and Load refuses.
func TestCheckIsLoadFromHeaders(t *testing.T) {
	// int4, group 8: one expert [2, 16] (expertSource).
	c := mustParse(t, group8)
	for _, tc := range []struct {
		what  string
		edit  func(src *model.MapSource, mod string)
		outIn [2]int
	}{
		{"well-formed", func(*model.MapSource, string) {}, [2]int{2, 16}},
		{"weight_shape disagrees", func(s *model.MapSource, m string) { s.Tensors[m+".weight_shape"] = i32(2, 24) }, [2]int{2, 16}},
		{"config shape disagrees", func(*model.MapSource, string) {}, [2]int{2, 24}},
		{"weight_shape of 3", func(s *model.MapSource, m string) { s.Tensors[m+".weight_shape"] = i32(2, 16, 1) }, [2]int{2, 16}},
		{"packed shape", func(s *model.MapSource, m string) { s.Tensors[m+".weight_packed"] = tensor.New(tensor.I32, 2, 3) }, [2]int{2, 16}},
		{"group size", func(s *model.MapSource, m string) { s.Tensors[m+".weight_scale"] = bf16([]int{2, 1}, 1, 1) }, [2]int{2, 16}},
		{"integer scale", func(s *model.MapSource, m string) { s.Tensors[m+".weight_scale"] = i32(1, 2, 3, 4) }, [2]int{2, 16}},
		{"missing scale", func(s *model.MapSource, m string) { delete(s.Tensors, m+".weight_scale") }, [2]int{2, 16}},
		{"missing shape", func(s *model.MapSource, m string) { delete(s.Tensors, m+".weight_shape") }, [2]int{2, 16}},
		{"missing everything", func(s *model.MapSource, m string) { delete(s.Tensors, m+".weight_packed") }, [2]int{2, 16}},
		{"zero points", func(s *model.MapSource, m string) { s.Tensors[m+".weight_zero_point"] = i32(0, 0) }, [2]int{2, 16}},
		{"dense and packed", func(s *model.MapSource, m string) { s.Tensors[m+".weight"] = tensor.New(tensor.BF16, 2, 16) }, [2]int{2, 16}},
	} {
		src, mod := expertSource(t)
		tc.edit(src, mod)
		hs := &headerSource{MapSource: src, allow: func(n string) bool { return n == mod+".weight_shape" }}
		_, lerr := c.Load(src, mod+".weight", tc.outIn[0], tc.outIn[1])
		cerr := c.Check(hs, mod+".weight", tc.outIn[0], tc.outIn[1])
		if fmt.Sprint(lerr) != fmt.Sprint(cerr) {
			t.Errorf("int4 %s: Check %v, Load %v; want the same", tc.what, cerr, lerr)
		}
		if (tc.what == "well-formed") != (lerr == nil) {
			t.Errorf("int4 %s: Load %v", tc.what, lerr)
		}
		if len(hs.reads) > 1 {
			t.Errorf("int4 %s: Check read %v", tc.what, hs.reads)
		}
	}

	// fp8 e4m3, 2×2 blocks: a [3, 5] weight, its scale float32 [2, 3].
	s := &FP8Block{Block: [2]int{2, 2}}
	fp8 := func() *model.MapSource {
		return &model.MapSource{Name: "fp8", Tensors: map[string]*tensor.Tensor{
			"m.weight":           tensor.New(tensor.F8E4M3, 3, 5),
			"m.weight_scale_inv": tensor.FromF32([]float32{1, 2, 4, 0.5, 3, 10}, 2, 3),
			"dense.weight":       tensor.New(tensor.BF16, 3, 5),
		}}
	}
	for _, tc := range []struct {
		what, want string // want: the error by hand, "" for none
		name       string
		edit       func(src *model.MapSource)
	}{
		{"well-formed", "", "m.weight", func(*model.MapSource) {}},
		{"dense", "", "dense.weight", func(*model.MapSource) {}},
		{"scale removed", "fp8 weight m.weight has no scale tensor m.weight_scale_inv in the checkpoint", "m.weight",
			func(src *model.MapSource) { delete(src.Tensors, "m.weight_scale_inv") }},
		{"scale shape", "m.weight: fp8_block weight [3, 5] with 2×2 blocks: scale is [2, 2], want [2, 3]", "m.weight",
			func(src *model.MapSource) { src.Tensors["m.weight_scale_inv"] = tensor.New(tensor.F32, 2, 2) }},
		{"scale dtype", "m.weight: fp8_block weight: scale dtype i32, want f32, bf16, f16 or f64", "m.weight",
			func(src *model.MapSource) { src.Tensors["m.weight_scale_inv"] = tensor.New(tensor.I32, 2, 3) }},
		// fp8 is a float dtype: "want a float dtype" contradicted itself.
		{"fp8 scale", "m.weight: fp8_block weight: scale dtype fp8_e4m3, want f32, bf16, f16 or f64", "m.weight",
			func(src *model.MapSource) { src.Tensors["m.weight_scale_inv"] = tensor.New(tensor.F8E4M3, 2, 3) }},
		{"f16 scale", "", "m.weight",
			func(src *model.MapSource) { src.Tensors["m.weight_scale_inv"] = tensor.New(tensor.F16, 2, 3) }},
		{"weight shape", "tensor m.weight has shape [3, 6] in the checkpoint, the config implies [3, 5]", "m.weight",
			func(src *model.MapSource) { src.Tensors["m.weight"] = tensor.New(tensor.F8E4M3, 3, 6) }},
	} {
		src := fp8()
		tc.edit(src)
		hs := &headerSource{MapSource: src, allow: func(string) bool { return false }}
		_, lerr := s.Load(src, tc.name, 3, 5)
		cerr := s.Check(hs, tc.name, 3, 5)
		if fmt.Sprint(lerr) != fmt.Sprint(cerr) || (tc.want == "") != (cerr == nil) || (cerr != nil && cerr.Error() != tc.want) {
			t.Errorf("fp8 %s: Check %v, Load %v; want %q from both", tc.what, cerr, lerr, tc.want)
		}
	}

	// A NaN scale is in the data: Load refuses it, Check cannot see it.
	src := fp8()
	src.Tensors["m.weight_scale_inv"] = tensor.FromF32([]float32{1, float32(math.NaN()), 4, 0.5, 3, 10}, 2, 3)
	if _, err := s.Load(src, "m.weight", 3, 5); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("fp8 NaN scale: Load %v; want it refused", err)
	}
	if err := s.Check(&headerSource{MapSource: src, allow: func(string) bool { return false }}, "m.weight", 3, 5); err != nil {
		t.Errorf("fp8 NaN scale: Check %v; want nil (no data read)", err)
	}
}
