//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// randFP8 returns a random fp8 block-scaled weight [out, in] with bh × bw
// blocks from p's generator (randomFP8).
func (p *pair) randFP8(out, in, bh, bw int) *tensor.Quantized {
	return randomFP8(p.rng, out, in, bh, bw)
}

// randomFP8 returns a random fp8 block-scaled weight [out, in] with bh ×
// bw blocks: fp8 bytes of N(0, 1) values (never NaN) and scales in [0.01,
// 0.03), so the weight is about N(0, 0.02²) as the checkpoints are.
func randomFP8(rng *rand.Rand, out, in, bh, bw int) *tensor.Quantized {
	data := tensor.New(tensor.F8E4M3, out, in)
	for i, v := range randn(rng, out*in, 1) {
		data.Data[i] = tensor.F32ToFP8E4M3(v)
	}
	sr, sc := (out+bh-1)/bh, (in+bw-1)/bw
	sv := make([]float32, sr*sc)
	for i := range sv {
		sv[i] = 0.01 + 0.02*rng.Float32()
	}
	return &tensor.Quantized{Format: tensor.QuantFP8Block, Shape: [2]int{out, in}, Data: data, Scale: tensor.FromF32(sv, sr, sc), Block: [2]int{bh, bw}}
}

// TestRankFP8Linear: a fp8 weight stays fp8 on the GPU (weights memory is
// its data plus scales, half of bf16), reads back as
// tensor.Quantized.Dequantize (the independent host reference: f32(q) ·
// scale), and Linear on it matches the CPU backend's Linear on the
// dequantized weight: within one rounding of the output in f32, and one
// more (the widened weight's) in bf16. Shapes with partial edge blocks and
// an input width that is not a multiple of 8 (the scalar widening path).
func TestRankFP8Linear(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		for _, c := range []struct{ out, in int }{{300, 200}, {128, 256}, {70, 203}} {
			name := fmt.Sprintf("fp8/%dx%d", c.out, c.in)
			q := p.randFP8(c.out, c.in, 128, 128)
			before := p.g.MemoryByClass()[driver.Weights]
			w := p.g.UploadQuantized(q, tensor.Invalid)
			got := p.g.MemoryByClass()[driver.Weights] - before
			if w.DType() != tensor.F8E4M3 || got > int64(c.out*c.in)+256+int64(4*len(q.Scale.F32())) || got < int64(c.out*c.in) {
				t.Errorf("%s: weight %s holding %d bytes; want fp8 data %d + scales", name, w.DType(), got, c.out*c.in)
			}
			wc := p.c.UploadQuantized(q, tensor.Invalid)
			assertClose(t, name+"/to_host", p.g.ToHost(w, 0, c.out, 0, c.in).F32(), q.Dequantize().F32(), 0, 0)
			x, xc := p.act(37, c.in, 1)
			scale := 0.02 * math.Sqrt(float64(c.in))
			at, rt := p.tols(scale)
			if p.dt != tensor.F32 {
				at, rt = 2*at, 2*rt
			}
			assertClose(t, name+"/linear", p.g.ToHost(p.g.Linear(x, w, nil), 0, 37, 0, c.out).F32(),
				p.c.ToHost(p.c.Linear(xc, wc, nil), 0, 37, 0, c.out).F32(), at, rt)
		}
	})
}

// TestRankFP8RoutedExperts: routed experts kept in fp8 on the cuBLAS path
// (widened chunk by chunk: the chunk is shrunk to 3 experts here) match the CPU backend's
// expert loop over the same experts dequantized on upload, on identical
// expert ids, all experts local and a rank's block of them.
func TestRankFP8RoutedExperts(t *testing.T) {
	old, oldMode := fp8ChunkBytes, moeGEMMMode
	defer func() { fp8ChunkBytes, moeGEMMMode = old, oldMode }()
	moeGEMMMode = "cublas" // the grouped kernel: TestRankGroupedKernelMatchesCPU
	forActDTypes(t, func(t *testing.T, p *pair) {
		const T, H, I, E = 61, 256, 128, 8
		fp8ChunkBytes = int64(3 * 2 * I * H * p.dt.Size())
		a := backend.RouteArgs{Experts: E, TopK: 3, Groups: 1, TopKGroup: 1, Sigmoid: true, NormTopK: true, Scale: 1.5}
		p.checkQuantizedExperts(t, "fp8 routed_experts", &a, T, H, I, func(rows, cols int) *tensor.Quantized {
			return p.randFP8(rows, cols, 128, 128)
		})
	})
}

// TestFP8DequantBF16Exactly: fp8_dequant_batch's 8-element path into bf16
// (the one a dense fp8 linear widens its weight with) gives, for every
// byte value, bf16(f32(q)·scale) rounded to nearest even, computed here
// from tensor.FP8E4M3ToF32 (the float8_e4m3fn table) and Go's f32 product;
// the NaN bytes 0x7f and 0xff give NaN. Blocks of 128 × 128 (shifts) and
// 96 × 40 (divisions), with scales from 0.0173 to 297.5.
func TestFP8DequantBF16Exactly(t *testing.T) {
	d := gpu(t)
	const N, K = 128, 256
	data := make([]byte, N*K)
	for i := range data {
		data[i] = byte(i*37 + i/K)
	}
	for _, blk := range [][2]int{{128, 128}, {96, 40}} {
		sr, sc := (N+blk[0]-1)/blk[0], (K+blk[1]-1)/blk[1]
		scales := make([]float32, sr*sc)
		for i := range scales {
			scales[i] = []float32{0.0173, 297.5, 1, 0.5e-3}[i%4]
		}
		sb := make([]byte, 0, 4*len(scales))
		for _, v := range scales {
			sb = binary.LittleEndian.AppendUint32(sb, math.Float32bits(v))
		}
		w, s := uploadBytes(t, d, data), uploadBytes(t, d, sb)
		addr := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(w.Ptr())), uint64(s.Ptr()))
		ap := uploadBytes(t, d, addr)
		out := poisoned(t, d, N*K, tensor.BF16)
		if err := d.FP8DequantBatch(out.Ptr(), ap.Ptr(), ap.Ptr().Add(8), 1, N, K, blk[0], blk[1], true, tensor.BF16); err != nil {
			t.Fatal(err)
		}
		host := make([]byte, 2*N*K)
		if err := d.CopyToHost(host, out.Ptr()); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, b := range data {
			r, c := i/K, i%K
			got := binary.LittleEndian.Uint16(host[2*i:])
			if b&0x7f == 0x7f {
				if !math.IsNaN(float64(tensor.BF16ToF32(got))) {
					bad++
				}
				continue
			}
			want := tensor.F32ToBF16(tensor.FP8E4M3ToF32(b) * scales[(r/blk[0])*sc+c/blk[1]])
			if got != want {
				if bad < 5 {
					t.Errorf("block %v: [%d, %d] fp8 %#02x: %#04x, want %#04x", blk, r, c, b, got, want)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("block %v: %d of %d values differ from bf16(f32(q)·scale)", blk, bad, N*K)
		}
	}
}
