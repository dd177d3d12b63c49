//go:build cuda

package cuda

import "math"

// The grouped expert kernels' tile choice: which tile configuration
// (mgTiles) runs a set of routed experts, from the weight kind and the
// average routed rows per expert, with the measurements that set each
// threshold; which quantizations kernels/moe_wgra.cu takes, and the k
// permutation its interleaved tiles read.

// hFrom is, per weight kind, the average routed rows per expert above
// which pickTile takes moe_wgra.cu's 64-row tile h on Hopper (fp8 at 16
// rows 5.4 ms against s's 6.6, at 64 rows 8.5 against r's 6.5; int4 at 43
// rows 7.8 against m's 9.2 and r's 9.8, at 11 rows 7.5 against s's 6.2);
// wgFrom the rows above which it takes a wgmma tile of 128 rows or more,
// and yFrom and yTo those above which and up to which it takes a tile of
// 192 rows rather than 128 (BenchmarkMoEGrouped, ms per layer). bf16, y against w: DeepSeek-V3 at
// 128 rows 6.9-7.6 against 7.9-8.4, Kimi-K2.5 at 171 rows 13.0 against
// 15.2-15.9, but at 85 rows 9.6-10.2 against 9.4-9.7 and at 64 rows 6.41
// against 6.28. Quantized experts take moe_wgra.cu's tiles, c against r
// (one run with both): fp8 at 128 rows 9.1 against 9.8 (moe_wgmma.cu's y
// and w 11.9 and 12.2 in an earlier run); int4 at 171 rows 14.5 against
// 20.3 (y 19.6). Since c reads its raw weights a step ahead (two runs
// each, c against r): fp8 at 256 rows 16.7-17.0 against 18.5-20.8 (r was
// ahead before, 16.4 against 17.8), int4 at 85 rows 8.9-11.1 against
// 11.5-12.8 (before, r 10.2 against 12.3): c from 64 rows on for int4
// and above 100 for fp8.
var (
	hFrom  = [...]float64{mgBF16: math.Inf(1), mgFP8: 12, mgInt4: 16}
	wgFrom = [...]float64{mgBF16: 0, mgFP8: 32, mgInt4: 64}
	yFrom  = [...]float64{mgBF16: 100, mgFP8: 100, mgInt4: 64}
	yTo    = [...]float64{mgBF16: math.Inf(1), mgFP8: math.Inf(1), mgInt4: math.Inf(1)}
)

// pTo is the average routed rows per expert up to which pickTile takes
// moe_wgra.cu's four-warpgroup tile p (256 weight rows × 128 tokens) for
// int4 above wgFrom (BenchmarkKimiMoEInt4, two layers, p against c: 85
// rows 18.3 ms against 21.1, 100 rows 19.5 against 22.2, 112 rows 20.9
// against 23.1, 128 rows 26.3 against 24.7): an expert past 128 rows takes
// a second row tile and widens its weights again. With k permuted in
// blocks of 32 (one run, two of each): 112 rows p 19.84-20.06 against c's
// 21.98-22.13, 122.7 rows 23.59-23.62 against 23.16-24.01, 128 rows
// 26.25-26.44 against 23.71-23.82: the threshold stands. Timed each after
// a second of its own work (benchWarm; the earlier runs followed the
// other form's): 85 rows p 17.60 against c 19.66, 112 rows 20.52 against
// 22.21, 128 rows 26.03 against 23.58, 171 rows 34.05 against 26.96.
const pTo = 112

// pickTile returns the tile configuration for rows average routed rows
// per expert of weight kind kind (moeTile when set), the fastest one
// BenchmarkMoEGrouped measured (ms per layer as moeKernelDefault's): with
// hopper (compute capability 9.0) a wgmma tile above wgFrom[kind] rows,
// of 192 rows above yFrom[kind] up to yTo[kind] and of 128 otherwise:
// bf16 w and y; fp8 and int4 moe_wgra.cu's r and c, which fall back to w
// and y where wgraTakes refuses the quantization. w for bf16 at every
// size (0.28 against s's 0.29 at 1 token, 4.7 against m's 5.1 at 2 rows,
// 5.7 against 6.0 at 16); r for fp8 above 32 rows (64 rows 6.4 against
// w's 7.9 and m's 11.5) up to 100 (int4 goes from h to p, then c: at 85
// rows r measured 10.0-10.3 against w's 11.6 and l's 16.2, c is ahead of
// it, and p of c: BenchmarkKimiMoEInt4 at 4096 tokens, two layers, 18.1-18.5
// ms against 21.3-22.1); p for int4 above wgFrom up to pTo rows; h for
// quantized weights above hFrom[kind] rows.
// Otherwise (and without Hopper) bf16 s up to 8 rows, m above; quantized
// s up to 16 rows, m up to 64, then x for fp8 and l for int4. A
// moe_wgra.cu tile that wgraTakes refuses runs its fallback
// (resolveTile): h m, r w, c y, p w.
func pickTile(kind int, rows float64, hopper bool) mgTile {
	want := moeTile
	if want == "" {
		switch {
		case hopper && kind == mgInt4 && rows > wgFrom[kind] && rows <= pTo:
			want = "p"
		case hopper && rows > yFrom[kind] && rows <= yTo[kind]:
			want = "y"
			if kind != mgBF16 {
				want = "c"
			}
		case hopper && rows > wgFrom[kind]:
			want = "w"
			if kind != mgBF16 {
				want = "r"
			}
		case hopper && rows > hFrom[kind]:
			want = "h"
		case kind == mgBF16 && rows <= 8, kind != mgBF16 && rows <= 16:
			want = "s"
		case kind == mgBF16 || rows <= 64:
			want = "m"
		case kind == mgFP8:
			want = "x"
		default:
			want = "l"
		}
	}
	return pickTileNamed(want)
}

// pickTileNamed returns the tile configuration called name (the l tile
// for an unknown name).
func pickTileNamed(name string) mgTile {
	for _, t := range mgTiles {
		if t.name == name {
			return t
		}
	}
	return mgTiles[2]
}

// hopper reports whether the device runs kernels/moe_wgmma.cu (sm_90a
// code: compute capability 9.0 exactly; GPU.hopper).
// resolveTile returns tile, or its fallback when it is a moe_wgra.cu tile
// that wgraTakes refuses for either of g's projections (gate/up with H
// input columns, down with I): decided before the routed rows are tiled,
// so that both GEMMs run one tile configuration (a fallback may tile the
// rows otherwise).
func resolveTile(tile mgTile, g *groupedWeights, H, I int) mgTile {
	if tile.ra && (!wgraTakes(g.kind, H, g.q13, tile.perm) || !wgraTakes(g.kind, I, g.q2, tile.perm)) {
		return pickTileNamed(tile.fallback)
	}
	return tile
}

// wgraTakes reports whether kernels/moe_wgra.cu takes a projection of
// weight kind kind with K input columns and quantization parameters q (as
// MoEGEMM's): fp8 with K % 16 == 0 and column blocks q[1] of 64 times a
// power of two (one scale per row and k tile of 64); int4 with bf16 scales
// (q[1] == 0), K % 32 == 0 and groups q[0] of 32 or a power of two >= 64
// (each half of a k tile in one group). A perm tile reads fp8 weights
// with k permuted in blocks of 64 and needs K % 64 == 0 besides (the
// gate/up output, down_proj's input, is stored permuted too: down's K is
// gate/up's N). bf16 weights never: there is nothing to widen.
func wgraTakes(kind, K int, q [3]int32, perm bool) bool {
	pow2 := func(v int32) bool { return v > 0 && v&(v-1) == 0 }
	switch kind {
	case mgFP8:
		return K%16 == 0 && (!perm || K%64 == 0) && q[1] >= 64 && q[1]%64 == 0 && pow2(q[1]/64)
	case mgInt4:
		return q[1] == 0 && K%32 == 0 && (q[0] == 32 || (q[0] >= 64 && pow2(q[0])))
	}
	return false
}

// permBlock returns the block of k columns within which tile permutes the
// tokens for weight kind kind (PermuteK), or 0 for none: int4 32, fp8 64.
func permBlock(tile mgTile, kind int) int {
	switch {
	case !tile.perm:
		return 0
	case kind == mgInt4:
		return 32
	case kind == mgFP8:
		return 64
	}
	return 0
}
