//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// The routed experts' own grouped GEMM (kernels/moe_gemm.cu on mma.sync;
// on Hopper, from a few routed rows per expert on, kernels/moe_wgmma.cu on
// wgmma, and kernels/moe_wgra.cu for fp8 and int4 weights): one launch for
// the fused gate/up projection with SiLU·mul in its epilogue and one for
// down_proj, each
// reading the experts' row offsets on the device, so a MoE layer needs no
// host round trip at all; the weights are read as they
// are stored (bf16, fp8 with block scales, packed int4) and widened to
// bf16 in shared memory. The gate/up GEMM gathers the tokens itself
// (row r of the permuted matrix reads token srcTok[r] of x), and the
// routed rows' buffers are sized by the slots (tokens · top_k), an upper
// bound the host knows without the counts. moe_combine then sums each
// token's expert outputs in top-k order, as on the cuBLAS path.
//
// HSDB_MOE_GEMM selects the path: "kernel" this kernel wherever it
// applies; "cublas", "streams", "loop" or "grouped" the per-expert cuBLAS
// GEMMs (driver.ExpertGEMMs; the last three also fix how those run);
// unset, moeKernelDefault decides per weight kind and rows per expert from
// what BenchmarkMoEGrouped measured.
var moeGEMMMode = os.Getenv("HSDB_MOE_GEMM")

// moeTile forces the kernel's tile configuration (an mgTiles name, from
// HSDB_MOE_TILE or set by tests and benchmarks; a wgmma tile on a device
// without wgmma is an error at launch); "" picks it from the rows per
// expert (pickTile).
var moeTile = os.Getenv("HSDB_MOE_TILE")

// Weight kinds of kernels/moe_gemm.cu (its kernels' name parts).
const (
	mgBF16 = iota
	mgFP8
	mgInt4
)

var mgKindName = [...]string{"bf16", "fp8", "int4"}

// mgTile is one of the grouped kernels' tile configurations: bm rows × bn
// weight rows per block, k tiles of 64 in stages. Tiles with wg run on
// Hopper's wgmma (compute capability 9.0 only) on kernels/moe_wgmma.cu
// (WG_CFG_*), the others on kernels/moe_gemm.cu (mma.sync; MG_CFG_*).
// Tiles with ra run on kernels/moe_wgra.cu (WR_CFG_*: quantized weights as
// wgmma's A operand, widened into registers) where wgraTakes says it
// applies, else on the tile named by fallback (the same bm, so the
// caller's row tiles stay valid). Tiles with perm read int4 and fp8
// weights with the tokens' k columns permuted in blocks of 32 and 64
// (PermuteK; moe_wgra.cu's PM), and store the gate/up output in that
// order for down_proj.
type mgTile struct {
	name            string
	bm, bn, threads int
	stages          int
	wg              bool
	ra              bool
	fallback        string
	perm            bool
}

var mgTiles = []mgTile{
	{"s", 16, 128, 128, 4, false, false, "", false},
	{"m", 64, 128, 128, 3, false, false, "", false},
	{"l", 128, 128, 256, 3, false, false, "", false},
	{"x", 128, 256, 256, 3, false, false, "", false},
	{"w", 128, 256, 256, 4, true, false, "", false},
	{"y", 192, 256, 384, 4, true, false, "", false},
	{"r", 128, 128, 256, 4, true, true, "w", false},
	{"c", 192, 192, 384, 4, true, true, "y", true},
	{"h", 64, 128, 256, 4, true, true, "m", false},
	{"p", 128, 256, 512, 4, true, true, "w", true},
}

// smem returns the dynamic shared memory the tile needs for weight kind
// kind. mma.sync tiles: per stage an A tile (bm rows of 72 bf16) and a B
// tile (bn rows: of 72 bf16, or raw 64 fp8 bytes / 32 int4 bytes), plus
// one widened B tile for quantized weights. wgmma tiles: per stage an A
// tile (bm rows of 128 bytes) and the raw weight tile (bn rows of 128, 64
// or 32 bytes), two widened [bn, 64] bf16 tiles for quantized weights,
// and 1 KiB to align the tiles to the 128-byte swizzle's 1024 bytes.
// moe_wgra.cu tiles (ra): per stage the tokens (bm rows of 128 bytes) and
// the raw weights (bn rows of 64 or 32 bytes), and the 1 KiB (quantized
// weights only: MoEGEMM runs a tile's fallback for anything wgraTakes
// refuses).
func (t mgTile) smem(kind int) int {
	if t.ra {
		return t.stages*(t.bm*128+[...]int{0, t.bn * 64, t.bn * 32}[kind]) + 1024
	}
	if t.wg {
		s := t.stages*(t.bm*128+[...]int{t.bn * 128, t.bn * 64, t.bn * 32}[kind]) + 1024
		if kind != mgBF16 {
			s += 2 * t.bn * 128
		}
		return s
	}
	a := t.bm * 72 * 2
	b := [...]int{t.bn * 72 * 2, t.bn * 64, t.bn * 32}[kind]
	s := t.stages * (a + b)
	if kind != mgBF16 {
		s += t.bn * 72 * 2
	}
	return s
}

// groupedWeights are an expert set's weights as the kernel reads them:
// device arrays of their addresses (w13: gate then up per expert, w2: down
// per expert) and the quantization parameters of each projection (qa, qb,
// qc and the scales' byte offset, as moe_gemm.cu documents).
type groupedWeights struct {
	kind        int
	addr        *Tensor // [3n] uint64: w13 addresses (2n), then w2 (n)
	n           int
	off13, off2 int64
	q13, q2     [3]int32
}

// groupedExperts returns set's weights for the grouped kernel, or nil when
// it does not apply (activations other than bf16, sizes or quantization
// blocks the kernel's tiles do not cover: those sets keep the cuBLAS path).
func (d *Device) groupedExperts(set *expertSet) *groupedWeights {
	I, H := set.inter, set.hidden
	if d.act != tensor.BF16 || I <= 0 || H <= 0 {
		return nil
	}
	g := &groupedWeights{}
	var w13, w2 []driver.Ptr
	switch {
	case set.q != nil:
		l13, l2 := set.q.l13, set.q.l2
		if H%16 != 0 || I%16 != 0 || l13.bw%8 != 0 || l2.bw%8 != 0 {
			return nil
		}
		g.kind, g.off13, g.off2 = mgFP8, l13.scaleOff, l2.scaleOff
		g.q13 = [3]int32{int32(l13.bh), int32(l13.bw), int32((l13.in + l13.bw - 1) / l13.bw)}
		g.q2 = [3]int32{int32(l2.bh), int32(l2.bw), int32((l2.in + l2.bw - 1) / l2.bw)}
		w13, w2 = ptrs(set.q.gateUp), ptrs(set.q.down)
	case set.q4 != nil:
		if H%32 != 0 || I%32 != 0 {
			return nil
		}
		l13, l2 := int4Of(set.q4.gateUp[0]), int4Of(set.q4.down[0])
		for i, w := range set.q4.gateUp {
			if L := int4Of(w); *L != *l13 {
				return nil
			}
			if L := int4Of(set.q4.down[i/2]); *L != *l2 {
				return nil
			}
		}
		for _, L := range []*int4Layout{l13, l2} {
			if L.group%8 != 0 || L.words*8 != L.in {
				return nil
			}
		}
		g.kind, g.off13, g.off2 = mgInt4, l13.scaleOff, l2.scaleOff
		g.q13 = [3]int32{int32(l13.group), b2i(l13.scaleF32), int32(l13.groups)}
		g.q2 = [3]int32{int32(l2.group), b2i(l2.scaleF32), int32(l2.groups)}
		w13, w2 = ptrs(set.q4.gateUp), ptrs(set.q4.down)
	default:
		if H%8 != 0 || I%8 != 0 {
			return nil
		}
		g.kind = mgBF16
		for _, w := range set.w13 {
			w13 = append(w13, w.ptr(), w.ptr().Add(int64(I)*int64(H)*2))
		}
		w2 = ptrs(set.w2)
	}
	g.n = len(w2)
	buf := make([]byte, 0, 8*(len(w13)+len(w2)))
	for _, p := range append(w13, w2...) {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p))
	}
	t, err := d.newTensor(tensor.I32, []int{len(buf) / 4}, driver.Weights, false)
	if err == nil {
		if err = d.mem.copyIn(t.ptr(), buf); err != nil {
			d.Free(t)
		}
	}
	if err != nil {
		panic(d.fail("experts", fmt.Errorf("the grouped kernel's weight addresses (%d experts): %w", g.n, err)))
	}
	g.addr = t
	return g
}

// useGroupedKernel reports whether RoutedExperts runs set's experts on the
// grouped kernel for slots routed slots (see moeGEMMMode); hopper: the
// device runs the wgmma tile.
func useGroupedKernel(set *expertSet, slots int, hopper bool) bool {
	if set.gw == nil || (slots+127)/128+min(set.gw.n, slots) > 65535 {
		return false // not taken, or more row tiles than a grid holds even at 128 rows
	}
	if int64(slots)*int64(max(set.inter, set.hidden)) >= 1<<32 {
		return false // the wgmma kernel addresses its input rows with 32-bit element offsets
	}
	switch moeGEMMMode {
	case "kernel":
		return true
	case "":
		return moeKernelDefault(set.gw.kind, float64(slots)/float64(set.gw.n), hopper)
	}
	return false
}

// moeKernelDefault is the default choice between the grouped kernel and
// the cuBLAS path for a weight kind at rows (average routed rows per
// local expert) on a device with (hopper) or without the wgmma tile, from
// BenchmarkMoEGrouped on one H200 (DeepSeek-V3's and Kimi-K2.5's expert
// shapes, one layer; ms per layer, kernel against the cuBLAS path):
//   - bf16 experts: the wgmma tiles up to 200 rows per expert are as fast
//     as or faster than cuBLAS's per-expert GEMMs (1 token 0.28 against
//     0.33, 16 rows 5.7 against 6.1, 64 rows 6.1 against 6.9, 128 rows on
//     y 7.6 against 8.2, Kimi-K2.5's 171 rows on y 12.9 against 15.5),
//     with no host copy of the counts; at 256 rows cuBLAS is ahead (12.5
//     against y's 14.5). Without them the mma.sync tiles
//     up to 48 rows (1.0-1.5x cuBLAS; 128 rows 14.3 against 8.2);
//   - int4 experts at every size measured (1 to 171 rows): 1.2-5x the
//     fused-GEMV/dequantize-to-scratch path (64 tokens 4.7 against 11.6,
//     512 tokens 6.9 against 32.5, 171 rows 19.9 against 39.5);
//   - fp8 experts: on Hopper at every size (the wgmma tiles 9.5 ms at 128
//     rows and 17.8 at 256, against 26.1 and 30.1 widening to a scratch);
//     without it up to 192 rows (1.4-57x the scratch path: 1 token 0.30
//     against 17.1, 128 rows 17.9 against 25.6).
func moeKernelDefault(kind int, rows float64, hopper bool) bool {
	switch kind {
	case mgBF16:
		return rows <= 48 || (hopper && rows <= 200)
	case mgFP8:
		return hopper || rows <= 192
	}
	return true
}

func (d *Device) hopper() bool { return d.g.hopper() }

// routedGrouped is RoutedExperts on the grouped kernel (GPU thread): y
// [T, H] from x [T, H] bf16, ids and weights [T, k].
func (d *Device) routedGrouped(y, xt, it, wt *Tensor, set *expertSet, T, k int) error {
	g := set.gw
	n, H, I := g.n, set.hidden, set.inter
	slots := T * k
	if moeTile != "" && !slices.ContainsFunc(mgTiles, func(t mgTile) bool { return t.name == moeTile }) {
		return fmt.Errorf("%w: grouped expert gemm: HSDB_MOE_TILE=%q is not a tile (s, m, l, x, w, y, r, c, h or p)", driver.ErrBadArgument, moeTile)
	}
	tile := resolveTile(pickTile(g.kind, float64(slots)/float64(n), d.hopper()), g, H, I)
	if tile.wg && !d.hopper() {
		return fmt.Errorf("%w: grouped expert gemm: tile %s needs wgmma (compute capability 9.0)", driver.ErrBadArgument, tile.name)
	}
	maxTiles := (slots+tile.bm-1)/tile.bm + min(n, slots)
	if maxTiles > 65535 { // the largest row tile needs the fewest
		tile = mgTiles[2]
		maxTiles = (slots+tile.bm-1)/tile.bm + min(n, slots)
	}
	if maxTiles > 65535 {
		return fmt.Errorf("%w: grouped expert gemm: %d slots need %d row tiles (at most 65535)", driver.ErrBadArgument, slots, maxTiles)
	}
	// counts [n], offsets and tiles [n+1], srcTok and slotRow [slots].
	idx, err := d.mem.alloc(int64(4*(3*n+2+2*slots)), driver.Activations)
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{idx, driver.Activations}})
	counts, offsets, tiles := idx, idx.Add(int64(4*n)), idx.Add(int64(4*(2*n+1)))
	srcTok, slotRow := idx.Add(int64(4*(3*n+2))), idx.Add(int64(4*(3*n+2+slots)))
	if err := d.g.MoEAlign(counts, srcTok, slotRow, it.ptr(), slots, k, set.first, n); err != nil {
		return err
	}
	if err := d.g.MoEGEMMTiles(counts, offsets, tiles, n, tile.bm); err != nil {
		return err
	}
	bufs, err := d.mem.alloc(int64(slots)*2*int64(I+H), driver.Activations)
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{bufs, driver.Activations}})
	act, y2 := bufs, bufs.Add(int64(slots)*2*int64(I))
	a := g.addr.ptr()
	xin := xt.ptr()
	w8 := d.w8a8Experts(g.kind == mgFP8, H, I)
	if b := permBlock(tile, g.kind); b != 0 || w8 {
		xp, err := d.mem.alloc(int64(T)*int64(H)*2, driver.Activations)
		if err != nil {
			return err
		}
		defer d.mem.free([]block{{xp, driver.Activations}})
		if b != 0 {
			if err := d.g.PermuteK(xp, xin, T, H, b); err != nil {
				return err
			}
			xin = xp
		}
		// W8A8: rounded through fp8 per 128 columns (PermuteK moves
		// columns within blocks of 32 or 64 only: the groups stay whole).
		if w8 {
			if err := d.g.FP8ActFakeQuant(xp, xin, T, H); err != nil {
				return err
			}
			xin = xp
		}
	}
	if err := d.g.MoEGEMM(g.kind, true, tile, act, xin, srcTok, a, offsets, tiles, n, I, H, maxTiles, g.off13, g.q13); err != nil {
		return err
	}
	if w8 { // the down projection's input, in the order the glu GEMM stored it (groups whole, as above)
		if err := d.g.FP8ActFakeQuant(act, act, slots, I); err != nil {
			return err
		}
	}
	if err := d.g.MoEGEMM(g.kind, false, tile, y2, act, 0, a.Add(int64(16*n)), offsets, tiles, n, H, I, maxTiles, g.off2, g.q2); err != nil {
		return err
	}
	return d.g.MoECombine(y.ptr(), y2, slotRow, wt.ptr(), T, k, H, slots, false, tensor.BF16)
}

// MoEGEMMTiles writes offsets [n+1] (exclusive prefix sums of counts [n]
// int32) and tiles [n+1] (of ceil(counts/bm)) with
// kernels/moe_gemm.cu's moe_gemm_tiles.
func (d *GPU) MoEGEMMTiles(counts, offsets, tiles driver.Ptr, n, bm int) error {
	if n <= 0 || bm <= 0 {
		return fmt.Errorf("%w: moe_gemm_tiles: %d experts, row tile %d", driver.ErrBadArgument, n, bm)
	}
	return d.Do(func() error {
		return d.launch("moe_gemm", "moe_gemm_tiles", dim3{x: 1}, dim3{x: 32}, 0, counts, int32(n), int32(bm), offsets, tiles)
	})
}

// MoEGEMM launches the grouped expert GEMM of weight kind kind
// (kernels/moe_gemm.cu's, or moe_wgmma.cu's for a wgmma
// tile): with glu, out [rows, N] = silu(x·gateᵀ)·(x·upᵀ) (x rows
// gathered through xidx), else out [rows, N] = x·wᵀ; wptr holds the
// experts' weight addresses, offsets and tiles come from MoEGEMMTiles with
// tile.bm, maxTiles bounds tiles[n] (the grid's rows). A perm tile with
// int4 or fp8 weights reads x's k columns in PermuteK's order (give it a
// permuted x), and with glu stores out in that order too (the down
// projection's input, as routedGrouped runs them).
func (d *GPU) MoEGEMM(kind int, glu bool, tile mgTile, out, x, xidx, wptr, offsets, tiles driver.Ptr, n, N, K, maxTiles int, scaleOff int64, q [3]int32) error {
	if n <= 0 || N <= 0 || K <= 0 || maxTiles <= 0 || maxTiles > 65535 || kind < 0 || kind >= len(mgKindName) {
		return fmt.Errorf("%w: moe_gemm: %d experts [%d, %d], %d row tiles", driver.ErrBadArgument, n, N, K, maxTiles)
	}
	if tile.ra && !wgraTakes(kind, K, q, tile.perm) {
		fb := pickTileNamed(tile.fallback)
		if fb.bm != tile.bm {
			return fmt.Errorf("%w: moe_gemm: tile %s does not take %s weights of K %d, q %v, and its fallback %s tiles the rows by %d, not %d (resolveTile picks it before the tiling)",
				driver.ErrBadArgument, tile.name, mgKindName[kind], K, q, fb.name, fb.bm, tile.bm)
		}
		tile = fb
	}
	part, name := tile.bn, "down"
	if glu {
		part, name = tile.bn/2, "glu"
	}
	mod := "moe_gemm"
	switch {
	case tile.ra:
		mod = "moe_wgra"
	case tile.wg:
		mod = "moe_wgmma"
	}
	fn := fmt.Sprintf("%s_%s_%s_%s", mod, mgKindName[kind], name, tile.name)
	grid := dim3{x: uint32((N + part - 1) / part), y: uint32(maxTiles)}
	return d.Do(func() error {
		return d.launch(mod, fn, grid, dim3{x: uint32(tile.threads)}, tile.smem(kind),
			out, x, xidx, wptr, offsets, tiles, int32(n), int32(N), int32(K), scaleOff, q[0], q[1], q[2])
	})
}

// PermuteK writes out [rows, cols] bf16 = x with each row's columns
// permuted in blocks of b, the k order of the perm tiles, with
// kernels/moe_wgra.cu's moe_wgra_permute_k32 or _k64: b 32, out[32i+f] =
// x[32i+pi(f)], pi(16s+8h+2c+e) = 8c+2s+h+4e for s, h, e in {0, 1}; b 64,
// out[64i+f] = x[64i+pi(f)], pi(16s+8h+2c+e) = 16c+4s+2h+e for s in 0..3,
// h, e in {0, 1}; c in 0..3 (the lane's column pair in a k16 step). cols
// must be a multiple of b.
func (d *GPU) PermuteK(out, x driver.Ptr, rows, cols, b int) error {
	if (b != 32 && b != 64) || rows <= 0 || cols <= 0 || cols%b != 0 {
		return fmt.Errorf("%w: moe_wgra_permute_k%d: [%d, %d] (blocks of 32 or 64 dividing the columns)", driver.ErrBadArgument, b, rows, cols)
	}
	blocks := int64(rows) * int64(cols) / int64(b)
	grid := dim3{x: uint32(min((blocks+255)/256, int64(max(d.SMs(), 1))*32))}
	return d.Do(func() error {
		return d.launch("moe_wgra", fmt.Sprintf("moe_wgra_permute_k%d", b), grid, dim3{x: 256}, 0, out, x, blocks)
	})
}
