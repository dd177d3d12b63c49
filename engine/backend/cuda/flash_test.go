//go:build cuda

package cuda

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// flashSeq is one sequence of a flash-attention test batch: n tokens at
// positions from..from+n-1 whose key j is cache row base+j.
type flashSeq struct{ base, from, n int }

func flashBatch(seqs []flashSeq) (base, pos []int32) {
	for _, s := range seqs {
		for i := range s.n {
			base, pos = append(base, int32(s.base)), append(pos, int32(s.from+i))
		}
	}
	return base, pos
}

// mixedFlashBatch is a varlen step with every edge the kernels' tiling
// has: a 130-token prompt (two full query tiles of 64 and a 2-token tail,
// or one of 128 and the tail; keys crossing two key-tile boundaries), a
// 1-token prompt, 37 tokens continuing a sequence from position 70 (a KV
// cache, keys before the queries), a 64-token prompt starting at position
// 5 (one full tile of 64, or half a tile of 128 whose second warpgroup has
// no rows; keys not tile-aligned), and two tokens of one sequence at positions
// 200 and 203 (not consecutive: two tiles). Cache rows are [0, 1280).
func mixedFlashBatch() (base, pos []int32) {
	base, pos = flashBatch([]flashSeq{{0, 0, 130}, {256, 0, 1}, {512, 70, 37}, {768, 5, 64}, {1024, 200, 1}})
	return append(base, 1024), append(pos, 203)
}

// flashCache returns a host cache [rows, width] of NaN except the rows the
// batch's sequences own, base..base+pos for each token, which hold N(0, 1)
// values rounded to dt.
func flashCache(rng *rand.Rand, base, pos []int32, rows, width int, dt tensor.DType) []float32 {
	c := make([]float32, rows*width)
	for i := range c {
		c[i] = float32(math.NaN())
	}
	last := map[int32]int32{}
	for t := range base {
		last[base[t]] = max(last[base[t]], pos[t])
	}
	for _, b := range slices.Sorted(maps.Keys(last)) {
		n := int(last[b]+1) * width
		copy(c[int(b)*width:], roundTo(randn(rng, n, 1), dt))
	}
	return c
}

// TestFlashTiles checks the query tiles against a split and order worked
// out by hand. Without a window a tile walks (last position)/64+1 key
// tiles: prompt A's tiles end at 63, 127, 129 (1, 2, 3 key tiles); B ends
// at 0 (1); C ends at 106 (2); D's tokens at 0, 1, 2 then 9 break at the
// position jump (1 each). With window 50 a tile's keys start at
// max(0, Pos0-49): A's tiles walk 63/64+1 = 1, (127-15)/64+1 = 2,
// (129-79)/64+1 = 1; C (106-21)/64+1 = 2.
func TestFlashTiles(t *testing.T) {
	base, pos := flashBatch([]flashSeq{{0, 0, 130}, {256, 0, 1}, {512, 70, 37}, {768, 0, 3}})
	base, pos = append(base, 768), append(pos, 9)
	a0, a1, a2 := FlashTile{0, 0, 0, 64}, FlashTile{64, 0, 64, 64}, FlashTile{128, 0, 128, 2}
	b, c := FlashTile{130, 256, 0, 1}, FlashTile{131, 512, 70, 37}
	d0, d1 := FlashTile{168, 768, 0, 3}, FlashTile{171, 768, 9, 1}
	if got, want := FlashTiles(base, pos, 0, 64), []FlashTile{a2, a1, c, a0, b, d0, d1}; !slices.Equal(got, want) {
		t.Errorf("no window: tiles\n%v, want\n%v", got, want)
	}
	if got, want := FlashTiles(base, pos, 50, 64), []FlashTile{a1, c, a0, a2, b, d0, d1}; !slices.Equal(got, want) {
		t.Errorf("window 50: tiles\n%v, want\n%v", got, want)
	}
	// Tiles of 128 (kernels/flash_wgmma.cu): A splits into 0..127 (2 key
	// tiles) and 128..129 (3); the others as above.
	if got, want := FlashTiles(base, pos, 0, 128), []FlashTile{a2, {0, 0, 0, 128}, c, b, d0, d1}; !slices.Equal(got, want) {
		t.Errorf("no window, 128 rows: tiles\n%v, want\n%v", got, want)
	}
	if got := flashTileBytes([]FlashTile{{1, 2, 3, 4}}); !slices.Equal(got, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}) {
		t.Errorf("tile bytes %v", got)
	}
}

// refFlash is causal attention in float64 over host copies (the textbook
// softmax(q·kᵀ·scale)·v), tokens addressed as backend.AttnArgs does; q and
// k heads are dk wide, v and output heads dv.
func refFlash(q, k, v []float32, base, pos []int32, heads, kvHeads, dk, dv, window int, scale float64) []float32 {
	g := heads / kvHeads
	out := make([]float32, len(base)*heads*dv)
	for t := range base {
		p := int(pos[t])
		lo := 0
		if window > 0 {
			lo = max(0, p-window+1)
		}
		for h := range heads {
			kvh := h / g
			qr := q[(t*heads+h)*dk : (t*heads+h+1)*dk]
			row := func(c []float32, j, dim int) []float32 {
				r := (int(base[t]) + j) * kvHeads * dim
				return c[r+kvh*dim : r+(kvh+1)*dim]
			}
			sc := make([]float64, p-lo+1)
			m := math.Inf(-1)
			for j := lo; j <= p; j++ {
				dot := 0.0
				for i, x := range row(k, j, dk) {
					dot += float64(qr[i]) * float64(x)
				}
				sc[j-lo] = dot * scale
				m = max(m, sc[j-lo])
			}
			sum := 0.0
			for i := range sc {
				sc[i] = math.Exp(sc[i] - m)
				sum += sc[i]
			}
			for e := range dv {
				acc := 0.0
				for j := lo; j <= p; j++ {
					acc += sc[j-lo] * float64(row(v, j, dv)[e])
				}
				out[(t*heads+h)*dv+e] = float32(acc / sum)
			}
		}
	}
	return out
}

// TestFlashAttention runs the kernel on the mixed batch for bf16 and f16,
// head dims 64 and 128, GQA groups 1, 4 and 8, with and without a sliding
// window, and compares it with refFlash. The output starts as NaN (every
// element must be written) and so does every cache row no token may see
// (rows past each sequence's last position, and the gaps between
// sequences): reading one would make the output NaN. Queries are N(0, 2²)
// so the softmax is peaked and the running-max rescaling matters. The
// tolerance is the existing bf16/f16 one (one rounding of the output; the
// probabilities' rounding for P·V stays well inside it).
func TestFlashAttention(t *testing.T) {
	d := gpu(t)
	var cfgs []flashCfg
	for _, dim := range []int{64, 128} {
		for _, g := range []int{1, 4, 8} {
			for _, w := range []int{0, 50} {
				cfgs = append(cfgs, flashCfg{dim, 2 * g, 2, w, dim})
			}
		}
	}
	// A window shorter than a key tile, and a window of one key (each
	// token sees only itself: out = v); DeepSeek's MLA (q·k over 192, v
	// 128; MHA as HF's expanded cache, and GQA 2 for the kernel's kv
	// addressing).
	cfgs = append(cfgs, flashCfg{64, 4, 1, 7, 64}, flashCfg{128, 2, 2, 1, 128}, flashCfg{192, 4, 4, 0, 128}, flashCfg{192, 4, 2, 50, 128})
	// On Hopper the bf16 MLA shape runs on kernels/flash_wgmma.cu: it is
	// checked there, and on flash_attention.cu's kernel with that turned
	// off (flashWgmma "0").
	kernels := []string{flashWgmma}
	if d.hopper() && flashWgmma != "0" {
		kernels = append(kernels, "0")
	}
	defer func(k string) { flashWgmma = k }(flashWgmma)
	for ci, c := range cfgs {
		for _, dt := range []tensor.DType{tensor.BF16, tensor.F16} {
			for i, kern := range kernels {
				if i > 0 && (c.dim != 192 || dt != tensor.BF16) {
					continue
				}
				flashWgmma = kern
				flashCase(t, d, ci, c, dt)
			}
		}
	}
}

// flashCfg is an attention shape of TestFlashAttention: head dims dim
// (q·k) and dv, query and kv heads, sliding window (0: none).
type flashCfg struct{ dim, heads, kvHeads, window, dv int }

// flashCase runs one TestFlashAttention case (the ci-th shape, c, in dt)
// on the kernel flashWgmma selects and compares it with refFlash.
func flashCase(t *testing.T, d *GPU, ci int, c flashCfg, dt tensor.DType) {
	t.Helper()
	base, pos := mixedFlashBatch()
	const rows = 1280
	name := fmt.Sprintf("flash/d%d-%d/h%d-kv%d/window%d/%s/wgmma=%q", c.dim, c.dv, c.heads, c.kvHeads, c.window, dt, flashWgmma)
	rng := rand.New(rand.NewPCG(uint64(ci), uint64(dt)))
	kh := flashCache(rng, base, pos, rows, c.kvHeads*c.dim, dt)
	vh := flashCache(rng, base, pos, rows, c.kvHeads*c.dv, dt)
	T := len(base)
	q := roundTo(randn(rng, T*c.heads*c.dim, 2), dt)
	scale := 1 / math.Sqrt(float64(c.dim))
	out := poisoned(t, d, T*c.heads*c.dv, dt)
	tr := d.FlashTileRows(dt, c.dim, c.dv)
	tiles := FlashTiles(base, pos, c.window, tr)
	tb := uploadBytes(t, d, flashTileBytes(tiles))
	p := AttnParams{Heads: c.heads, KVHeads: c.kvHeads, HeadDimK: c.dim, HeadDimV: c.dv, Window: c.window, Scale: float32(scale), TileRows: tr}
	if err := d.FlashAttention(out.Ptr(), upload(t, d, q, dt).Ptr(), upload(t, d, kh, dt).Ptr(), upload(t, d, vh, dt).Ptr(),
		tb.Ptr(), len(tiles), p, dt); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := refFlash(q, kh, vh, base, pos, c.heads, c.kvHeads, c.dim, c.dv, c.window, float64(p.Scale))
	at, rt := tol(dt)
	assertClose(t, name, download(t, d, out, T*c.heads*c.dv, dt), want, at, rt)
}

// TestFlashAttentionArgs: what the kernels cannot do is refused with
// ErrBadArgument before any launch.
func TestFlashAttentionArgs(t *testing.T) {
	d := gpu(t)
	buf := poisoned(t, d, 4096, tensor.BF16)
	ok := AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Scale: 0.125}
	for _, c := range []struct {
		name string
		p    AttnParams
		dt   tensor.DType
		ptr  driver.Ptr
	}{
		{"f32", ok, tensor.F32, buf.Ptr()},
		{"dk96", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 96, HeadDimV: 96}, tensor.BF16, buf.Ptr()},
		{"dk!=dv", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 128, HeadDimV: 64}, tensor.BF16, buf.Ptr()},
		{"dk192-dv192", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 192, HeadDimV: 192}, tensor.BF16, buf.Ptr()},
		{"stride", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, QStride: 260}, tensor.BF16, buf.Ptr()},
		{"misaligned", ok, tensor.BF16, buf.Ptr().Add(2)},
		{"tile rows", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 64, HeadDimV: 64, Scale: 0.125, TileRows: 128}, tensor.BF16, buf.Ptr()},
		// bf16 MLA with the other kernel's tiles: 64 where flash_wgmma.cu
		// takes 128 (Hopper), 128 where flash_attention.cu takes 64.
		{"mla tile rows", AttnParams{Heads: 4, KVHeads: 2, HeadDimK: 192, HeadDimV: 128, Scale: 0.125,
			TileRows: flashBM + flashWgmmaBM - d.FlashTileRows(tensor.BF16, 192, 128)}, tensor.BF16, buf.Ptr()},
	} {
		if err := d.FlashAttention(buf.Ptr(), c.ptr, buf.Ptr(), buf.Ptr(), buf.Ptr(), 1, c.p, c.dt); !errorsIsBadArgument(err) {
			t.Errorf("%s: error %v, want ErrBadArgument", c.name, err)
		}
	}
}

// TestRankFlashAttentionMatchesCPU: the backend op on the mixed batch takes
// the flash path (useFlash) in bf16 and f16 and matches the CPU backend
// within one rounding, and the GEMM path (HSDB_CUDA_FLASH=0) within two
// (both round the probabilities). f32 never takes the flash path.
func TestRankFlashAttentionMatchesCPU(t *testing.T) {
	base, pos := mixedFlashBatch()
	defer func() { flashAttn = true }()
	for _, dt := range []tensor.DType{tensor.BF16, tensor.F16} {
		t.Run(dt.String(), func(t *testing.T) {
			p := newPair(t, dt)
			for _, c := range []struct{ heads, kvHeads, dim, window, dv int }{{8, 2, 128, 0, 128}, {8, 8, 64, 0, 64}, {8, 1, 128, 50, 128}, {8, 8, 192, 0, 128}} {
				name := fmt.Sprintf("attention/d%d-%d/h%d-kv%d/window%d", c.dim, c.dv, c.heads, c.kvHeads, c.window)
				k, kc := p.act(1280, c.kvHeads*c.dim, 1)
				v, vc := p.act(1280, c.kvHeads*c.dv, 1)
				q, qc := p.act(len(base), c.heads*c.dim, 2)
				a := &backend.AttnArgs{Heads: c.heads, KVHeads: c.kvHeads, DK: c.dim, DV: c.dv, Window: c.window,
					Scale: float32(1 / math.Sqrt(float64(c.dim))), Base: base, Pos: pos}
				if !useFlash(dt, a, 130) || useFlash(tensor.F32, a, 130) || useFlash(dt, a, 1) {
					t.Fatalf("%s: useFlash picks %v for %s prefill, %v for f32, %v for decode", name,
						useFlash(dt, a, 130), dt, useFlash(tensor.F32, a, 130), useFlash(dt, a, 1))
				}
				flash := p.g.Attention(q, k, v, a)
				p.check(name+"/flash-vs-cpu", flash, p.c.Attention(qc, kc, vc, a), 1)
				flashAttn = false
				gemm := p.g.Attention(q, k, v, a)
				flashAttn = true
				cols := c.heads * c.dv
				at, rt := p.tols(2)
				assertClose(t, name+"/flash-vs-gemm", p.g.ToHost(flash, 0, len(base), 0, cols).F32(),
					p.g.ToHost(gemm, 0, len(base), 0, cols).F32(), at, rt)
			}
		})
	}
}
