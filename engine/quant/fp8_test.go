package quant_test

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine/backend/cpu"
	"hsdb/engine/model"
	"hsdb/engine/quant"
	"hsdb/engine/tensor"
)

// fp8 e4m3 bytes decoded by hand: 0x38 = 1.0 (exponent 7, bias 7), 0x40 =
// 2.0, 0x30 = 0.5, 0x3c = 1.5, 0xb8 = -1.0, 0x00 = 0.

// w35 is a 3×5 fp8 weight; with 2×2 blocks its scale grid is 2×3 (the last
// block row and column partial).
func w35() *tensor.Tensor {
	return &tensor.Tensor{DType: tensor.F8E4M3, Shape: []int{3, 5}, Data: []byte{
		0x38, 0x40, 0x30, 0x3c, 0xb8,
		0x00, 0x38, 0x38, 0x40, 0x30,
		0xb8, 0x3c, 0x40, 0x00, 0x38,
	}}
}

// want35 is w35 times the scales [[1, 2, 4], [0.5, 3, 10]] by 2×2 block.
var want35 = []float32{
	1 * 1, 2 * 1, 0.5 * 2, 1.5 * 2, -1 * 4,
	0 * 1, 1 * 1, 1 * 2, 2 * 2, 0.5 * 4,
	-1 * 0.5, 1.5 * 0.5, 2 * 3, 0 * 3, 1 * 10,
}

func fp8Source() *model.MapSource {
	return &model.MapSource{Name: "fp8", Tensors: map[string]*tensor.Tensor{
		"m.weight":             w35(),
		"m.weight_scale_inv":   tensor.FromF32([]float32{1, 2, 4, 0.5, 3, 10}, 2, 3),
		"bad.weight":           w35(),
		"bad.weight_scale_inv": tensor.FromF32(make([]float32, 4), 2, 2),
		"noscale.weight":       w35(),
		"dense.weight":         tensor.FromF32(make([]float32, 15), 3, 5),
	}}
}

func scheme(t *testing.T, cfg string) model.QuantScheme {
	t.Helper()
	s, err := quant.Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFP8BlockDequantize: the block-scaled weight dequantizes to the values
// derived by hand; a scale grid of the wrong shape is refused with both
// shapes; a weight without its scale names the scale; a dense weight is not
// quantized.
func TestFP8BlockDequantize(t *testing.T) {
	s := scheme(t, `{"quant_method":"fp8","fmt":"e4m3","weight_block_size":[2,2]}`)
	src := fp8Source()
	q, err := s.Load(src, "m.weight", 3, 5)
	if err != nil || q == nil {
		t.Fatalf("q %v, err %v", q, err)
	}
	got := q.Dequantize()
	if got.DType != tensor.F32 || got.Shape[0] != 3 || got.Shape[1] != 5 {
		t.Fatalf("got %s %v", got.DType, got.Shape)
	}
	for i, v := range got.F32() {
		if v != want35[i] {
			t.Fatalf("element %d: %v, want %v (all %v)", i, v, want35[i], got.F32())
		}
	}
	_, err = s.Load(src, "bad.weight", 3, 5)
	if err == nil || !strings.Contains(err.Error(), "[3, 5]") || !strings.Contains(err.Error(), "scale is [2, 2], want [2, 3]") {
		t.Errorf("bad scale: err = %v", err)
	}
	_, err = s.Load(src, "noscale.weight", 3, 5)
	if err == nil || !strings.Contains(err.Error(), "noscale.weight has no scale tensor noscale.weight_scale_inv") {
		t.Errorf("no scale: err = %v", err)
	}
	if q, err := s.Load(src, "dense.weight", 3, 5); q != nil || err != nil {
		t.Errorf("dense weight: %v, %v", q, err)
	}
	if got := s.Stored(src, "m.weight"); strings.Join(got, " ") != "m.weight m.weight_scale_inv" {
		t.Errorf("stored %v", got)
	}
}

// TestParse: quant_method picks the scheme; an unknown one, another fp8
// format and a missing block size are refused naming the field.
func TestParse(t *testing.T) {
	if s, err := quant.Parse(nil); s != nil || err != nil {
		t.Errorf("absent: %v, %v", s, err)
	}
	if s, err := quant.Parse([]byte("null")); s != nil || err != nil {
		t.Errorf("null: %v, %v", s, err)
	}
	if s := scheme(t, `{"quant_method":"fp8","weight_block_size":[128,128]}`); s.String() != "fp8 e4m3, 128×128 blocks" {
		t.Errorf("String() = %q", s.String())
	}
	for cfg, want := range map[string]string{
		`{"quant_method":"gptq","bits":4}`:                              `quant_method "gptq" is not supported`,
		`{"quant_method":"fp8","fmt":"e5m2","weight_block_size":[1,1]}`: `fmt "e5m2" is not supported`,
		`{"quant_method":"fp8"}`:                                        "weight_block_size []",
	} {
		if _, err := quant.Parse([]byte(cfg)); err == nil || !strings.Contains(err.Error(), "quantization_config: "+want) {
			t.Errorf("%s: err = %v, want %q", cfg, err, want)
		}
	}
	s, err := quant.FromConfig([]byte(`{"model_type":"kimi_k25","text_config":{"quantization_config":{"quant_method":"fp8","weight_block_size":[2,2]}}}`))
	if err != nil || s == nil || s.String() != "fp8 e4m3, 2×2 blocks" {
		t.Errorf("text_config: %v, %v", s, err)
	}
}

// TestFP8Planned: 300×200 in 128×128 blocks is 60000 bytes of fp8 and a
// 3×2 grid of float32 scales; the LM head, router, embeddings, norms and
// modules_to_not_convert stay dense.
func TestFP8Planned(t *testing.T) {
	s := scheme(t, `{"quant_method":"fp8","weight_block_size":[128,128],"modules_to_not_convert":["layers.0.self_attn"]}`)
	if b, q := s.Planned("model.layers.3.mlp.experts.7.down_proj.weight", 300, 200); !q || b != 300*200+4*3*2 {
		t.Errorf("expert: %d bytes, quantized %v", b, q)
	}
	for _, n := range []string{"lm_head.weight", "model.embed_tokens.weight", "model.layers.3.mlp.gate.weight", "model.norm.weight",
		"model.layers.3.input_layernorm.weight", "model.layers.0.self_attn.o_proj.weight"} {
		if _, q := s.Planned(n, 300, 200); q {
			t.Errorf("%s planned as quantized", n)
		}
	}
}

// TestLoaderLinearFP8: a rank's rows and columns of an fp8 weight, loaded
// through the scheme on the CPU backend, are the hand-derived values of
// those rows and columns, whether the shard falls on the 2×2 blocks (sliced
// quantized) or not (dequantized, then sliced); the report names the
// weight once per load. Without a scheme the fp8 tensor is refused.
func TestLoaderLinearFP8(t *testing.T) {
	s := scheme(t, `{"quant_method":"fp8","weight_block_size":[2,2]}`)
	for _, c := range []struct {
		rows, cols [2]int
	}{{[2]int{0, 2}, [2]int{0, 5}}, {[2]int{2, 3}, [2]int{0, 5}}, {[2]int{1, 3}, [2]int{0, 5}}, {[2]int{0, 3}, [2]int{2, 4}}, {[2]int{0, 3}, [2]int{1, 4}}, {[2]int{0, 3}, [2]int{0, 5}}} {
		dev := cpu.New(-1)
		l := model.NewLoader(fp8Source(), dev, 0, 1, tensor.Invalid)
		l.Quant = s
		x := l.Pp("m").Linear("weight", 3, 5, c.rows, c.cols)
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
		got := dev.ToHost(x, 0, c.rows[1]-c.rows[0], 0, c.cols[1]-c.cols[0]).F32()
		var want []float32
		for i := c.rows[0]; i < c.rows[1]; i++ {
			want = append(want, want35[i*5+c.cols[0]:i*5+c.cols[1]]...)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d values, want %d", c, len(got), len(want))
		}
		for i := range want {
			if !(got[i] == want[i]) {
				t.Fatalf("rows %v cols %v: got %v, want %v", c.rows, c.cols, got, want)
			}
		}
		if strings.Join(l.Report.Dequantized, " ") != "m.weight" || l.Report.Format != "fp8 e4m3, 2×2 blocks" {
			t.Errorf("report %v %q", l.Report.Dequantized, l.Report.Format)
		}
	}
	l := model.NewLoader(fp8Source(), cpu.New(-1), 0, 1, tensor.Invalid)
	l.Pp("m").Linear("weight", 3, 5, [2]int{0, 3}, [2]int{0, 5})
	if err := l.Err(); !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), "is fp8 but the config has no quantization_config") {
		t.Errorf("no scheme: err = %v", err)
	}
}

// TestFP8SkippedModuleStoredFP8: a weight that modules_to_not_convert keeps
// dense but the checkpoint stores as fp8 with a block scale is refused
// naming the weight and the entry; it was dequantized as if the config
// quantized it (vLLM builds the module unquantized and cannot take the
// fp8 bytes and their scale). A listed module stored dense loads dense,
// and an unlisted one as fp8.
func TestFP8SkippedModuleStoredFP8(t *testing.T) {
	s := scheme(t, `{"quant_method":"fp8","fmt":"e4m3","weight_block_size":[2,2],"modules_to_not_convert":["m","dense"]}`)
	src := fp8Source()
	src.Tensors["other.weight"], src.Tensors["other.weight_scale_inv"] = src.Tensors["m.weight"], src.Tensors["m.weight_scale_inv"]
	want := `fp8 weight m.weight: quantization_config.modules_to_not_convert lists "m", which keeps the module dense, but the checkpoint stores it as fp8 with a block scale`
	if q, err := s.Load(src, "m.weight", 3, 5); q != nil || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("m.weight: %v, %v\nwant %s", q, err, want)
	}
	if q, err := s.Load(src, "dense.weight", 3, 5); q != nil || err != nil {
		t.Errorf("dense.weight: %v, %v; want dense", q, err)
	}
	if q, err := s.Load(src, "other.weight", 3, 5); q == nil || err != nil {
		t.Errorf("other.weight: %v, %v; want fp8", q, err)
	}
}
