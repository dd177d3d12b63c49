package plan_test

import (
	"encoding/binary"
	"os"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/plan"
	"hsdb/engine/quant"
	"hsdb/engine/tensor"
)

// int4Checkpoint returns the tensor headers of a compressed-tensors
// checkpoint of tree tr under scheme qs: every weight qs quantizes as
// weight_packed I32 [out, in/8], weight_scale of dtype scale [out, in/32]
// and weight_shape I32 [2] = [out, in]; everything else bf16.
func int4Checkpoint(tr *model.Tree, qs *quant.Compressed, scale tensor.DType) *model.MapSource {
	src := &model.MapSource{Name: "int4", Tensors: map[string]*tensor.Tensor{}}
	for _, p := range tr.Params() {
		if len(p.Shape) == 2 && qs.Quantizes(p.Name) {
			mod := p.Name[:len(p.Name)-len(".weight")]
			src.Tensors[mod+".weight_packed"] = tensor.New(tensor.I32, p.Shape[0], p.Shape[1]/8)
			src.Tensors[mod+".weight_scale"] = tensor.New(scale, p.Shape[0], p.Shape[1]/32)
			ws := tensor.New(tensor.I32, 2) // [out, in], as the loader and the plan check it
			binary.LittleEndian.PutUint32(ws.Data, uint32(p.Shape[0]))
			binary.LittleEndian.PutUint32(ws.Data[4:], uint32(p.Shape[1]))
			src.Tensors[mod+".weight_shape"] = ws
			continue
		}
		src.Tensors[p.Name] = tensor.New(tensor.BF16, p.Shape...)
	}
	return src
}

// TestPlanInt4ScaleDType: the CUDA backend keeps int4 group scales stored
// in bf16 as they are and widens any other dtype to float32
// (engine/backend/cuda uploadInt4); the plan counted 2 bytes a scale
// whatever the checkpoint stored. testdata/hf/kimi_k2_thinking's routed
// experts (layers 1 and 2, 32 experts each, gate and up [128, 96], down
// [96, 128], group 32) per rank, by hand:
//
//	--tp 1: gate, up 128·12 words·4 = 6144 + 128·3 scales + 8 (weight_shape);
//	  down 96·16·4 = 6144 + 96·4 scales + 8. bf16 scales: 2·(6144 + 768 + 8)
//	  + (6144 + 768 + 8) = 20760 an expert; float16 scales kept as
//	  float32: 2·(6144 + 1536 + 8) + (6144 + 1536 + 8) = 23064.
//	--tp 2: gate, up [64, 96] 3072 + 64·3 scales + 8; down [96, 64] 3072 +
//	  96·2 scales + 8: bf16 3·(3072 + 384 + 8) = 10392, float32 3·(3072 +
//	  768 + 8) = 11544.
//
// 64 experts in all: quantized 1328640 and 1476096 bytes at --tp 1,
// 665088 and 738816 at --tp 2. The dense rest is the same either way.
func TestPlanInt4ScaleDType(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/hf/kimi_k2_thinking/config.json")
	if err != nil {
		t.Fatal(err)
	}
	qs, err := quant.FromConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	ct, ok := qs.(*quant.Compressed)
	if !ok {
		t.Fatalf("scheme %T, want compressed-tensors", qs)
	}
	for _, c := range []struct {
		tp            int
		bf16, widened int64
	}{{1, 64 * 20760, 64 * 23064}, {2, 64 * 10392, 64 * 11544}} {
		tr, d := tree(t, string(raw), c.tp, false)
		var dense [2]int64
		for i, scale := range []tensor.DType{tensor.BF16, tensor.F16} {
			p, err := plan.New(tr, d, plan.Options{World: c.tp, Quant: qs, Src: int4Checkpoint(tr, ct, scale)})
			if err != nil {
				t.Fatal(err)
			}
			want := []int64{c.bf16, c.widened}[i]
			for _, r := range p.Ranks {
				if r.QuantizedWeights != want {
					t.Errorf("--tp %d, %s scales, rank %d: %d quantized bytes, want %d", c.tp, scale, r.Rank, r.QuantizedWeights, want)
				}
			}
			dense[i] = p.Ranks[0].Weights - p.Ranks[0].QuantizedWeights
		}
		if dense[0] != dense[1] || dense[0] <= 0 {
			t.Errorf("--tp %d: dense bytes %v, want one positive count", c.tp, dense)
		}
	}
}
