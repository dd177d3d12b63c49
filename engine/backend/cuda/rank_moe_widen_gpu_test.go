//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"hsdb/engine/tensor"
)

// TestMoEGEMMWidensFP8Exactly: every grouped expert kernel (each tile, on
// mma.sync and on wgmma) widens each fp8 weight to exactly
// bf16(f32(q)·scale), the dequantize-on-load value. One expert, a down
// projection (no GLU) of x = the identity (routed row r has a 1 in
// column r), so out[r, n] = 1·w[n, r] plus exact zeros: a bitwise check
// of the widened weight. The weight [128, 256] holds every fp8 byte but
// the NaNs 0x7f and 0xff (all signs, zeros, subnormals, the largest
// magnitude 448) in each row; block 128×128 scales 0.0173 and 297.5. The
// reference is computed
// here from the float8_e4m3fn table and Go's f32 product, rounded to
// nearest even (±0 compare equal: the sign of a zero weight does not
// survive the sum with the other products' +0). Then one NaN byte in row 5: column 5 of the output must
// be NaN for every routed row (0·NaN), every other column unchanged.
// Tiles that read k permuted (perm) get the identity with its columns
// permuted alike (PermuteK), as routedGrouped gives them x, so the check
// stays out[r, n] = w[n, r].
func TestMoEGEMMWidensFP8Exactly(t *testing.T) {
	p := newPair(t, tensor.BF16)
	d := p.g
	const N, K = 128, 256
	scales := []float32{0.0173, 297.5}
	mk := func(nanAt int) *tensor.Quantized {
		data := tensor.New(tensor.F8E4M3, N, K)
		for n := range N {
			for k := range K {
				b := byte((n*37 + k) % 256)
				if b&0x7f == 0x7f {
					b ^= 0x01 // 0x7e / 0xfe: the largest finite magnitudes
				}
				data.Data[n*K+k] = b
			}
		}
		if nanAt >= 0 {
			data.Data[nanAt*K+3] = 0x7f
		}
		return &tensor.Quantized{Format: tensor.QuantFP8Block, Shape: [2]int{N, K}, Data: data,
			Scale: tensor.FromF32(append([]float32(nil), scales...), 1, 2), Block: [2]int{128, 128}}
	}
	eye := make([]float32, K*K)
	for r := range K {
		eye[r*K+r] = 1
	}
	x := upload(t, d.g, eye, tensor.BF16)
	xp := poisoned(t, d.g, K*K, tensor.BF16)
	if err := d.g.PermuteK(xp.Ptr(), x.Ptr(), K, K, 64); err != nil {
		t.Fatal(err)
	}
	counts := uploadI32(t, d.g, []int32{K})
	idx := uploadI32(t, d.g, make([]int32, 4))
	for _, nanRow := range []int{-1, 5} {
		q := mk(nanRow)
		w := d.UploadQuantized(q, tensor.Invalid).(*Tensor)
		L := fp8Of(w)
		addr := make([]byte, 8)
		binary.LittleEndian.PutUint64(addr, uint64(w.ptr()))
		wptr := uploadBytes(t, d.g, addr)
		for _, tile := range mgTiles {
			if tile.wg && !d.hopper() {
				continue
			}
			name := fmt.Sprintf("tile-%s/nan-row-%d", tile.name, nanRow)
			offsets, tiles := idx.Ptr(), idx.Ptr().Add(8)
			if err := d.g.MoEGEMMTiles(counts.Ptr(), offsets, tiles, 1, tile.bm); err != nil {
				t.Fatal(err)
			}
			out := poisoned(t, d.g, K*N, tensor.BF16)
			maxTiles := (K+tile.bm-1)/tile.bm + 1
			xin := x.Ptr()
			if permBlock(tile, mgFP8) == 64 {
				xin = xp.Ptr()
			}
			err := d.g.MoEGEMM(mgFP8, false, tile, out.Ptr(), xin, 0, wptr.Ptr(), offsets, tiles, 1, N, K, maxTiles,
				L.scaleOff, [3]int32{128, 128, 2})
			if err != nil {
				t.Fatal(err)
			}
			host := tensor.New(tensor.BF16, K*N)
			if err := d.g.CopyToHost(host.Data, out.Ptr()); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for r := range K {
				for n := range N {
					got := binary.LittleEndian.Uint16(host.Data[2*(r*N+n):])
					ref := tensor.F32ToBF16(tensor.FP8E4M3ToF32(q.Data.Data[n*K+r]) * scales[r/128])
					gotNaN := math.IsNaN(float64(tensor.BF16ToF32(got)))
					if n == nanRow {
						if !gotNaN {
							bad++
						}
						continue
					}
					if got != ref && got|ref != 0x8000 {
						if bad < 5 {
							t.Errorf("%s: out[%d, %d] = %#04x, want %#04x (fp8 %#02x · %g)", name, r, n, got, ref, q.Data.Data[n*K+r], scales[r/128])
						}
						bad++
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d outputs differ from bf16(f32(q)·scale)", name, bad, K*N)
			}
		}
		d.Free(w)
	}
}
