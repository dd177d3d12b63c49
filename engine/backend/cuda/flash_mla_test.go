//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// TestFlashAttentionMLA runs kernels/flash_wgmma.cu on keys and values
// read straight from a kv_b_proj output kv [rows, heads·256] (per head
// [k_nope 128 | v 128]) and a shared rope key kPe [rows, 64], on the mixed
// batch, against refFlash on the per-head keys [k_nope_h | kPe] and values
// v_h built on the host (HF DeepseekV3Attention's expand and cat).
func TestFlashAttentionMLA(t *testing.T) {
	d := gpu(t)
	if !d.UseFlashAttentionMLA(tensor.BF16) {
		t.Skip("kernels/flash_wgmma.cu does not run on this device")
	}
	base, pos := mixedFlashBatch()
	const rows, heads = 1280, 4
	rng := rand.New(rand.NewPCG(11, 12))
	kv := flashCache(rng, base, pos, rows, heads*256, tensor.BF16)
	kPe := flashCache(rng, base, pos, rows, 64, tensor.BF16)
	kh, vh := make([]float32, rows*heads*192), make([]float32, rows*heads*128)
	for r := range rows {
		for h := range heads {
			src := kv[(r*heads+h)*256:]
			copy(kh[(r*heads+h)*192:], src[:128])
			copy(kh[(r*heads+h)*192+128:], kPe[r*64:(r+1)*64])
			copy(vh[(r*heads+h)*128:], src[128:256])
		}
	}
	T := len(base)
	q := roundTo(randn(rng, T*heads*192, 2), tensor.BF16)
	p := AttnParams{Heads: heads, KVHeads: heads, HeadDimK: 192, HeadDimV: 128, Scale: float32(1 / math.Sqrt(192)), TileRows: flashWgmmaBM}
	tiles := FlashTiles(base, pos, 0, flashWgmmaBM)
	want := refFlash(q, kh, vh, base, pos, heads, heads, 192, 128, 0, float64(p.Scale))
	at, rt := tol(tensor.BF16)
	qd, kvd, ped, td := upload(t, d, q, tensor.BF16), upload(t, d, kv, tensor.BF16), upload(t, d, kPe, tensor.BF16), uploadBytes(t, d, flashTileBytes(tiles))
	defer func(pp string) { flashPingPong = pp }(flashPingPong)
	for _, pp := range []string{"", "0"} { // ping-pong (the default) and lockstep
		flashPingPong = pp
		out := poisoned(t, d, T*heads*128, tensor.BF16)
		if err := d.FlashAttentionMLA(out.Ptr(), qd.Ptr(), kvd.Ptr(), ped.Ptr(), td.Ptr(), len(tiles), p, tensor.BF16); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "flash-mla/kv_b-output/pingpong="+pp, download(t, d, out, T*heads*128, tensor.BF16), want, at, rt)
	}
	out := poisoned(t, d, T*heads*128, tensor.BF16)

	for _, c := range []struct {
		name string
		p    AttnParams
		dt   tensor.DType
	}{
		{"f16", p, tensor.F16},
		{"gqa", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 192, HeadDimV: 128, TileRows: flashWgmmaBM}, tensor.BF16},
		{"dims", AttnParams{Heads: 4, KVHeads: 4, HeadDimK: 128, HeadDimV: 128, TileRows: flashWgmmaBM}, tensor.BF16},
		{"tiles64", AttnParams{Heads: 4, KVHeads: 4, HeadDimK: 192, HeadDimV: 128, TileRows: 64}, tensor.BF16},
		// the kernel keeps the maxima of the unscaled scores: a scale that
		// is not positive and finite is refused before the launch
		{"scale 0", AttnParams{Heads: 4, KVHeads: 4, HeadDimK: 192, HeadDimV: 128, TileRows: flashWgmmaBM}, tensor.BF16},
		{"scale -1", AttnParams{Heads: 4, KVHeads: 4, HeadDimK: 192, HeadDimV: 128, TileRows: flashWgmmaBM, Scale: -1}, tensor.BF16},
		{"scale NaN", AttnParams{Heads: 4, KVHeads: 4, HeadDimK: 192, HeadDimV: 128, TileRows: flashWgmmaBM, Scale: float32(math.NaN())}, tensor.BF16},
		{"scale +Inf", AttnParams{Heads: 4, KVHeads: 4, HeadDimK: 192, HeadDimV: 128, TileRows: flashWgmmaBM, Scale: float32(math.Inf(1))}, tensor.BF16},
	} {
		if err := d.FlashAttentionMLA(out.Ptr(), out.Ptr(), out.Ptr(), out.Ptr(), out.Ptr(), 1, c.p, c.dt); err == nil {
			t.Errorf("%s: FlashAttentionMLA took %+v in %s", c.name, c.p, c.dt)
		}
	}
}

// TestRankMLAAttentionMatchesCPU: the backend op reads kv_b_proj's output
// in place on Hopper (bf16, the mixed batch and a decode step; with
// HSDB_CUDA_FLASH_WGMMA=0, and in f16, it writes the per-head keys and
// values out first) and matches the CPU
// backend, whose MLAAttention is WriteMLAKV into temporaries then its f32
// Attention, within one rounding.
func TestRankMLAAttentionMatchesCPU(t *testing.T) {
	mixedBase, mixedPos := mixedFlashBatch()
	// A decode step: one token of each of four sequences, every token its
	// own query tile.
	decodeBase, decodePos := flashBatch([]flashSeq{{0, 100, 1}, {256, 255, 1}, {512, 30, 1}, {768, 200, 1}})
	defer func(k string) { flashWgmma = k }(flashWgmma)
	for _, dt := range []tensor.DType{tensor.BF16, tensor.F16} {
		for ki, kern := range []string{flashWgmma, "0", flashWgmma} {
			flashWgmma = kern
			base, pos, batch := mixedBase, mixedPos, "mixed"
			if ki == 2 {
				base, pos, batch = decodeBase, decodePos, "decode"
			}
			name := fmt.Sprintf("mla_attention/%s/%s/wgmma=%q", dt, batch, kern)
			p := newPair(t, dt)
			const heads = 8
			kv, kvc := p.act(1280, heads*256, 1)
			kPe, kPec := p.act(1280, 64, 1)
			q, qc := p.act(len(base), heads*192, 2)
			a := &backend.MLAAttnArgs{Heads: heads, Nope: 128, Rope: 64, V: 128, Scale: float32(1 / math.Sqrt(192)), Base: base, Pos: pos}
			p.check(name, p.g.MLAAttention(q, kv, kPe, a), p.c.MLAAttention(qc, kvc, kPec, a), 1)
		}
	}
}
