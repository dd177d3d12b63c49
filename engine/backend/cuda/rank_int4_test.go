//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// packInt4 packs q (values in [-8, 7], [rows, cols] row-major) as
// compressed-tensors' pack_to_int32 does: q+8, column 8w+i in bits
// [4i, 4i+4) of word w.
func packInt4(q []int8, rows, cols int) *tensor.Tensor {
	words := (cols + 7) / 8
	t := tensor.New(tensor.I32, rows, words)
	for r := range rows {
		for c := range cols {
			o := (r*words + c/8) * 4
			w := binary.LittleEndian.Uint32(t.Data[o:])
			w |= uint32(int32(q[r*cols+c])+8) << (4 * uint(c%8))
			binary.LittleEndian.PutUint32(t.Data[o:], w)
		}
	}
	return t
}

// randomInt4 returns a random int4 weight [rows, cols] with group scales
// of dtype sdt (values of about 0.02, a trained expert's).
func randomInt4(rng *rand.Rand, rows, cols, group int, sdt tensor.DType) *tensor.Quantized {
	q := make([]int8, rows*cols)
	for i := range q {
		q[i] = int8(rng.IntN(16) - 8)
	}
	groups := (cols + group - 1) / group
	s := make([]float32, rows*groups)
	for i := range s {
		s[i] = float32(0.005 + 0.01*rng.Float64())
	}
	return &tensor.Quantized{Format: tensor.QuantInt4Group, Shape: [2]int{rows, cols}, Block: [2]int{1, group},
		Data: packInt4(q, rows, cols), Scale: tensor.FromF32(s, rows, groups).Convert(sdt)}
}

// TestInt4LinearMatchesCPU: Linear on a packed int4 weight equals the CPU
// backend's Linear on the same weight dequantized exactly (the CPU's
// UploadQuantized, tensor.Quantized.Dequantize), on both paths: the fused
// W4A16 kernel (tokens <= int4GEMVTokens) and dequantize-to-scratch + GEMM
// (more tokens; there the reference weight is rounded to the activation
// dtype as the scratch is). The weight occupies exactly its packed words
// plus scales, and ToHost of it returns the dequantized values.
func TestInt4LinearMatchesCPU(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		for _, sdt := range []tensor.DType{tensor.BF16, tensor.F32} {
			const out, in, group = 72, 256, 32
			q := randomInt4(p.rng, out, in, group, sdt)
			before := p.g.MemoryInUse()
			gw := p.g.UploadQuantized(q, tensor.Invalid)
			// Packed words (out·in/2 bytes, 256-aligned) then the scales.
			want := int64((out*in/2+255)&^255) + int64(out*(in/group)*sdt.Size())
			if got := p.g.MemoryInUse() - before; got != want {
				t.Errorf("scales %s: int4 weight [%d, %d] holds %d bytes on the device, want %d", sdt, out, in, got, want)
			}
			exact := q.Dequantize()
			var sub []float32
			for r := 3; r < out; r++ {
				sub = append(sub, exact.F32()[r*in+8:r*in+40]...)
			}
			assertClose(t, fmt.Sprintf("scales %s: ToHost of the int4 weight against Dequantize", sdt), p.g.ToHost(gw, 3, out, 8, 40).F32(), sub, 0, 0)
			cwExact := p.c.Upload(exact)
			cwRounded := p.c.Upload(exact.Convert(p.dt).Convert(tensor.F32))
			// Every token count through the fused kernel, then through the
			// scratch path whole and in blocks of 20 rows (72 = 3·20 + 12).
			for _, mode := range []struct {
				gemv  int
				chunk int64
			}{{40, 0}, {0, 0}, {0, int64(20 * in * p.dt.Size())}} {
				savedG, savedC := int4GEMVTokens, int4ChunkBytes
				int4GEMVTokens, int4ChunkBytes = mode.gemv, mode.chunk
				for _, T := range []int{1, 2, 3, 4, 5, 8, 9, 16, 17, 40} {
					gx, cx := p.act(T, in, 1)
					cw := cwExact
					if T > int4GEMVTokens {
						cw = cwRounded
					}
					scale := 0.02 * 8 * 4 // |w|·sqrt(in)
					p.check(fmt.Sprintf("scales %s %+v tokens %d", sdt, mode, T), p.g.Linear(gx, gw, nil), p.c.Linear(cx, cw, nil), scale)
				}
				int4GEMVTokens, int4ChunkBytes = savedG, savedC
			}
			p.g.Free(gw)
		}
	})
}

// TestRankInt4RoutedExperts: routed experts kept packed in int4 on the
// cuBLAS path (HSDB_MOE_GEMM=cublas: experts with at most int4GEMVTokens rows through the
// fused kernel, the others dequantized chunk by chunk, the chunk shrunk to
// 3 experts here) match the CPU backend's expert loop over the same experts
// dequantized exactly on upload, on identical expert ids, with 61 tokens
// (most experts dequantized) and 5 (most through the fused kernel), all
// experts local and a rank's block of them.
func TestRankInt4RoutedExperts(t *testing.T) {
	old, oldMode := int4ChunkExpertBytes, moeGEMMMode
	defer func() { int4ChunkExpertBytes, moeGEMMMode = old, oldMode }()
	moeGEMMMode = "cublas" // the grouped kernel: TestRankGroupedKernelMatchesCPU
	forActDTypes(t, func(t *testing.T, p *pair) {
		const H, I, E = 256, 128, 8
		int4ChunkExpertBytes = int64(3 * 2 * I * H * p.dt.Size())
		a := backend.RouteArgs{Experts: E, TopK: 3, Groups: 1, TopKGroup: 1, Sigmoid: true, NormTopK: true, Scale: 2.827}
		for _, T := range []int{61, 5} {
			p.checkQuantizedExperts(t, fmt.Sprintf("int4 routed_experts/T%d", T), &a, T, H, I, func(rows, cols int) *tensor.Quantized {
				return randomInt4(p.rng, rows, cols, 32, tensor.BF16)
			})
		}
	})
}
