//go:build cuda

package cuda

import (
	"fmt"
	"slices"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// TestMoEGEMMTiles: moe_gemm_tiles' prefix sums on counts with empty
// experts, against a hand count: counts 0 5 17 0 16 1 and row tiles of
// 16 give offsets 0 0 5 22 22 38 39 and tiles 0 0 1 3 3 4 5 (5 rows: one
// tile, 17: two, 16: one, 1: one).
func TestMoEGEMMTiles(t *testing.T) {
	d := gpu(t)
	counts := uploadI32(t, d, []int32{0, 5, 17, 0, 16, 1})
	out := uploadI32(t, d, make([]int32, 14))
	if err := d.MoEGEMMTiles(counts.Ptr(), out.Ptr(), out.Ptr().Add(7*4), 6, 16); err != nil {
		t.Fatal(err)
	}
	got := download(t, d, out, 14, tensor.I32)
	want := []float32{0, 0, 5, 22, 22, 38, 39, 0, 0, 1, 3, 3, 4, 5}
	if !slices.Equal(got, want) {
		t.Fatalf("offsets and tiles %v, want %v", got, want)
	}
}

// TestPermuteK: moe_wgra_permute_k32 and _k64 on [2, 128] values 0..255
// (exact in bf16) against the permutations written
// out by hand from the fragment layout: lane c holds columns 2c, 2c+1,
// 2c+8, 2c+9 of each k16 step. Blocks of 32 (int4): lane c's word c of
// the block holds both steps' pairs, pair j in nibbles j and j+4, which
// puts column (f%8)·4 + f/8 at position f. Blocks of 64 (fp8): lane c's
// chunk c holds the four steps' pairs in order, which puts column 16c +
// 4s + 2h + e at position 16s + 8h + 2c + e. Columns not a multiple of
// the block, and other blocks, are refused.
func TestPermuteK(t *testing.T) {
	d := gpu(t)
	const rows, cols = 2, 128
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(i)
	}
	in := upload(t, d, x, tensor.BF16)
	pi64 := make([]int, 64)
	for s := range 4 {
		for h := range 2 {
			for c := range 4 {
				for e := range 2 {
					pi64[16*s+8*h+2*c+e] = 16*c + 4*s + 2*h + e
				}
			}
		}
	}
	for _, tc := range []struct {
		b  int
		pi []int
	}{
		{32, []int{0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29,
			2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31}},
		{64, pi64},
	} {
		out := poisoned(t, d, rows*cols, tensor.BF16)
		if err := d.PermuteK(out.Ptr(), in.Ptr(), rows, cols, tc.b); err != nil {
			t.Fatal(err)
		}
		got := download(t, d, out, rows*cols, tensor.BF16)
		var want []float32
		for b := range rows * cols / tc.b {
			for j := range tc.b {
				want = append(want, float32(tc.b*b+tc.pi[j]))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("blocks of %d: permuted %v, want %v", tc.b, got, want)
		}
		if err := d.PermuteK(out.Ptr(), in.Ptr(), 1, tc.b+32, tc.b); tc.b == 64 && !errorsIsBadArgument(err) {
			t.Fatalf("blocks of 64, 96 columns: err %v, want a bad argument", err)
		}
		if err := d.PermuteK(out.Ptr(), in.Ptr(), 1, tc.b+8, tc.b); !errorsIsBadArgument(err) {
			t.Fatalf("blocks of %d, %d columns: err %v, want a bad argument", tc.b, tc.b+8, err)
		}
	}
	if err := d.PermuteK(in.Ptr(), in.Ptr(), 1, 64, 16); !errorsIsBadArgument(err) {
		t.Fatalf("blocks of 16: err %v, want a bad argument", err)
	}
}

// TestRankGroupedKernelMatchesCPU: the grouped expert kernel
// (HSDB_MOE_GEMM=kernel: fused gather + gate/up GEMM + SiLU·mul, down GEMM,
// offsets read on the device) against the CPU backend's expert loop on
// identical expert ids (moeref's routing on both), for each tile
// configuration and each stored form of the weights: bf16, fp8 with
// 128×128 and 32×64 block scales (dequantized exactly on the CPU's upload,
// tensor.Quantized.Dequantize) and int4 with bf16 group-32 (K a multiple
// of 64 or not) and group-128 scales and f32 group-32 scales (which
// moe_wgra.cu's tiles r and c hand to moe_wgmma.cu's w and y).
// Sizes are mostly no multiples of the tiles (hidden 48-256, intermediate 24-128
// against 64-column and 64-256-row tiles; one k tile or several), the
// routing is ragged with experts that get no token (5 tokens over 16
// experts), experts spread over several row tiles (300 tokens over 8;
// 1100 over 4 for the wgmma tiles too), all experts local and a rank's
// block of them. The bound is 4 bf16
// roundings, as the cuBLAS path's test.
func TestRankGroupedKernelMatchesCPU(t *testing.T) {
	oldMode, oldTile := moeGEMMMode, moeTile
	defer func() { moeGEMMMode, moeTile = oldMode, oldTile }()
	moeGEMMMode = "kernel"
	p := newPair(t, tensor.BF16)
	// fp8 makes an fp8 weight pair in bh×bw blocks.
	fp8 := func(bh, bw int) func(rows, cols int) (backend.Tensor, backend.Tensor) {
		return func(rows, cols int) (backend.Tensor, backend.Tensor) {
			q := p.randFP8(rows, cols, bh, bw)
			return p.g.UploadQuantized(q, tensor.Invalid), p.c.UploadQuantized(q, tensor.Invalid)
		}
	}
	kinds := []struct {
		name string
		H, I int
		mk   func(rows, cols int) (backend.Tensor, backend.Tensor)
	}{
		{"bf16", 200, 88, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			return p.weight(tensor.BF16, 0.1, rows, cols)
		}},
		{"fp8-128x128", 208, 80, fp8(128, 128)},
		{"fp8-32x64", 208, 80, fp8(32, 64)},
		// K % 64 == 0 on both projections: the perm tiles (c, p) read fp8
		// with k permuted in blocks of 64 (the sizes above take their
		// fallback).
		{"fp8-k-tiles-of-64", 192, 128, fp8(128, 128)},
		{"fp8-32x64-k-tiles-of-64", 192, 128, fp8(32, 64)},
		{"int4", 224, 96, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			q := randomInt4(p.rng, rows, cols, 32, tensor.BF16)
			return p.g.UploadQuantized(q, tensor.Invalid), p.c.UploadQuantized(q, tensor.Invalid)
		}},
		{"int4-k-tiles-of-64", 256, 128, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			q := randomInt4(p.rng, rows, cols, 32, tensor.BF16)
			return p.g.UploadQuantized(q, tensor.Invalid), p.c.UploadQuantized(q, tensor.Invalid)
		}},
		{"int4-group-128", 256, 128, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			q := randomInt4(p.rng, rows, cols, 128, tensor.BF16)
			return p.g.UploadQuantized(q, tensor.Invalid), p.c.UploadQuantized(q, tensor.Invalid)
		}},
		{"int4-f32-scales", 96, 32, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			q := randomInt4(p.rng, rows, cols, 32, tensor.F32)
			return p.g.UploadQuantized(q, tensor.Invalid), p.c.UploadQuantized(q, tensor.Invalid)
		}},
		{"fp8-one-k-tile", 48, 32, fp8(128, 128)},
		{"bf16-one-k-tile", 56, 24, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			return p.weight(tensor.BF16, 0.1, rows, cols)
		}},
		// Several column blocks on every tile (gate/up's 272 columns, down's
		// 520) beside an expert's several row tiles (the T1100 case); the
		// weights' scale keeps the sums' size that of the kinds above (the
		// tolerances are relative to each value, their rounding to the sums').
		{"bf16-several-column-blocks", 520, 272, func(rows, cols int) (backend.Tensor, backend.Tensor) {
			return p.weight(tensor.BF16, 0.05, rows, cols)
		}},
		{"fp8-several-column-blocks", 512, 384, fp8(128, 128)},
	}
	for _, tile := range mgTiles {
		if tile.wg && !p.g.hopper() {
			t.Logf("tile %s: wgmma needs compute capability 9.0; skipped", tile.name)
			continue
		}
		t.Run("tile-"+tile.name, func(t *testing.T) { // -test.run 'TestRankGroupedKernelMatchesCPU/tile-y$': one tile
			moeTile = tile.name
			for _, k := range kinds {
				cases := []struct{ T, E, topk int }{{5, 16, 2}, {300, 8, 2}}
				if tile.wg { // 275 rows per expert: several of the wgmma tile's 128-row tiles
					cases = append(cases, struct{ T, E, topk int }{1100, 4, 2})
				}
				for _, c := range cases {
					name := fmt.Sprintf("tile-%s/%s/T%d-E%d", tile.name, k.name, c.T, c.E)
					a := backend.RouteArgs{Experts: c.E, TopK: c.topk, Groups: 1, TopKGroup: 1, Sigmoid: true, NormTopK: true, Scale: 2.5}
					p.checkGroupedExperts(t, name, &a, c.T, k.H, k.I, k.mk)
				}
			}
		})
	}
}

// checkGroupedExperts routes T tokens of random logits by a on both
// devices (ids must agree) and compares RoutedExperts over weights made by
// mk (gate and up [I, H], down [H, I] per expert; the GPU's and the CPU's
// copy) with all experts local and with experts 2..6 local, checking that
// the grouped kernel took the set.
func (p *pair) checkGroupedExperts(t *testing.T, prefix string, a *backend.RouteArgs, T, H, I int, mk func(rows, cols int) (backend.Tensor, backend.Tensor)) {
	t.Helper()
	// Random logits until experts 2..6 (the rank's block below) get a
	// routed slot: a block with none would compare zeros with zeros.
	var ids, w, idc, wc backend.Tensor
	for try := 0; ; try++ {
		lg, lc, _ := p.f32Logits(T, a.Experts, false)
		ids, w = p.g.Route(lg, a)
		idc, wc = p.c.Route(lc, a)
		g, c := hostIDs(p.g, ids), hostIDs(p.c, idc)
		if !slices.Equal(g, c) {
			t.Fatalf("%s: device ids differ from the cpu's", prefix)
		}
		if slices.ContainsFunc(c, func(id int32) bool { return id >= 2 && id < 7 }) {
			break
		}
		if try == 100 {
			t.Fatalf("%s: 100 routings without a slot for experts 2..6", prefix)
		}
	}
	x, xc := p.act(T, H, 1)
	for _, local := range [][2]int{{0, a.Experts}, {2, 7}} {
		var ws, wcs [3][]backend.Tensor
		for range local[1] - local[0] {
			for i, shape := range [][2]int{{I, H}, {I, H}, {H, I}} {
				g, c := mk(shape[0], shape[1])
				ws[i], wcs[i] = append(ws[i], g), append(wcs[i], c)
			}
		}
		set := p.g.Experts(local[0], ws[0], ws[1], ws[2])
		if es := set.(*expertSet); es.gw == nil {
			t.Fatalf("%s: the grouped kernel does not take this expert set", prefix)
		}
		got := p.g.RoutedExperts(x, ids, w, set)
		want := p.c.RoutedExperts(xc, idc, wc, p.c.Experts(local[0], wcs[0], wcs[1], wcs[2]))
		at, rt := p.tols(1)
		name := fmt.Sprintf("%s/%d-%d", prefix, local[0], local[1])
		assertClose(t, name, p.g.ToHost(got, 0, T, 0, H).F32(), p.c.ToHost(want, 0, T, 0, H).F32(), 4*at, 4*rt)
		if m := p.c.Moments(want, 0, T, 0, H); !(m.SumSq > 0) {
			t.Errorf("%s: the CPU reference is all zero", name)
		}
	}
}

// TestMoEGEMMArgs: the launch wrappers refuse sizes the kernels cannot
// take before touching a GPU (no device needed), and the grouped path is
// not chosen when the row tiles would not fit a grid.
func TestMoEGEMMArgs(t *testing.T) {
	var d GPU // no device: the checks come first
	if err := d.MoEGEMMTiles(0, 0, 0, 0, 16); !errorsIsBadArgument(err) {
		t.Errorf("moe_gemm_tiles with no experts: %v", err)
	}
	for _, c := range []struct{ n, N, K, tiles, kind int }{{0, 8, 8, 1, mgBF16}, {4, 0, 8, 1, mgBF16}, {4, 8, 8, 65536, mgBF16}, {4, 8, 8, 1, 7}} {
		if err := d.MoEGEMM(c.kind, true, mgTiles[0], 0, 0, 0, 0, 0, 0, c.n, c.N, c.K, c.tiles, 0, [3]int32{}); !errorsIsBadArgument(err) {
			t.Errorf("moe_gemm %+v: %v", c, err)
		}
	}
	set := &expertSet{gw: &groupedWeights{n: 384}}
	if useGroupedKernel(set, 1<<24, true) {
		t.Error("2^24 slots (131072 row tiles of 128) took the grouped kernel")
	}
	if set.gw = nil; useGroupedKernel(set, 8, true) {
		t.Error("a set the kernel does not take took it")
	}
}

// TestWgraTakes: which quantizations kernels/moe_wgra.cu takes (no device
// needed), by its stated requirements: fp8 column blocks of 64·2^j with K
// % 16 == 0; int4 with bf16 scales, K % 32 == 0 and groups of 32 or
// 64·2^j; never bf16. And pickTile hands quantized prefill sizes on Hopper
// to its tiles h, r and c, bf16 to w and y (the thresholds of hFrom,
// wgFrom, yFrom and yTo), each moe_wgra.cu tile has a fallback outside
// it, and resolveTile takes the fallback when either projection is refused.
func TestWgraTakes(t *testing.T) {
	for _, c := range []struct {
		kind, K int
		q       [3]int32
		want    bool
		perm    bool // a perm tile (c, p): fp8 needs K % 64 == 0, k permuted in blocks of 64
	}{
		{mgFP8, 7168, [3]int32{128, 128, 56}, true, false},
		{mgFP8, 7168, [3]int32{32, 64, 112}, true, false},
		{mgFP8, 7168, [3]int32{128, 256, 28}, true, false},
		{mgFP8, 7168, [3]int32{128, 192, 38}, false, false}, // 192 = 64·3
		{mgFP8, 7168, [3]int32{128, 32, 224}, false, false}, // two blocks per k tile
		{mgFP8, 7160, [3]int32{128, 128, 56}, false, false}, // K % 16 = 8
		{mgFP8, 7184, [3]int32{128, 128, 57}, true, false},  // K % 64 = 16
		{mgInt4, 7168, [3]int32{32, 0, 224}, true, false},
		{mgInt4, 224, [3]int32{32, 0, 7}, true, false},
		{mgInt4, 7168, [3]int32{128, 0, 56}, true, false},
		{mgInt4, 7168, [3]int32{32, 1, 224}, false, false}, // f32 scales
		{mgInt4, 7168, [3]int32{16, 0, 448}, false, false}, // four groups per k tile
		{mgInt4, 7168, [3]int32{96, 0, 75}, false, false},  // a group across k tiles
		{mgInt4, 7176, [3]int32{32, 0, 225}, false, false}, // K % 32 = 8
		{mgBF16, 7168, [3]int32{}, false, false},
		{mgFP8, 7168, [3]int32{128, 128, 56}, true, true},
		{mgFP8, 7184, [3]int32{128, 128, 57}, false, true},
		{mgInt4, 7200, [3]int32{32, 0, 225}, true, true}, // int4 permutes in blocks of 32: K % 32 == 0 suffices
	} {
		if got := wgraTakes(c.kind, c.K, c.q, c.perm); got != c.want {
			t.Errorf("wgraTakes(%s, K %d, q %v, perm %v) = %v, want %v", mgKindName[c.kind], c.K, c.q, c.perm, got, c.want)
		}
	}
	old := moeTile
	defer func() { moeTile = old }()
	moeTile = ""
	for _, c := range []struct {
		kind int
		rows float64
		want string
	}{{mgBF16, 128, "y"}, {mgBF16, 64, "w"}, {mgFP8, 64, "r"}, {mgFP8, 128, "c"}, {mgFP8, 256, "c"},
		{mgInt4, 11, "s"}, {mgInt4, 43, "h"}, {mgInt4, 85, "p"}, {mgInt4, 112, "p"}, {mgInt4, 113, "c"}, {mgInt4, 171, "c"}, {mgFP8, 8, "s"}, {mgFP8, 16, "h"}} {
		if got := pickTile(c.kind, c.rows, true).name; got != c.want {
			t.Errorf("pickTile(%s, %g rows, hopper) = %s, want %s", mgKindName[c.kind], c.rows, got, c.want)
		}
	}
	for _, tile := range mgTiles {
		if !tile.ra {
			continue
		}
		if fb := pickTileNamed(tile.fallback); fb.ra || fb.name != tile.fallback {
			t.Errorf("tile %s falls back to %q: the fallback must be a tile outside moe_wgra.cu", tile.name, tile.fallback)
		}
	}
	fp8 := &groupedWeights{kind: mgFP8, q13: [3]int32{128, 128, 56}, q2: [3]int32{128, 128, 16}}
	if got := resolveTile(pickTileNamed("c"), fp8, 7168, 2048).name; got != "c" {
		t.Errorf("resolveTile(c, DeepSeek-V3's fp8 experts) = %s, want c", got)
	}
	fp8.q2 = [3]int32{128, 192, 11} // down_proj's column blocks of 192 = 64·3: refused
	if got := resolveTile(pickTileNamed("c"), fp8, 7168, 2048).name; got != "y" {
		t.Errorf("resolveTile(c, fp8 down_proj in blocks of 192) = %s, want its fallback y", got)
	}
	fp8.q2 = [3]int32{128, 128, 16}
	if got := resolveTile(pickTileNamed("c"), fp8, 7168, 2080).name; got != "y" {
		t.Errorf("resolveTile(c, fp8 with an intermediate of 2080 = 64·32.5) = %s, want its fallback y (c permutes k in blocks of 64)", got)
	}
	if got := resolveTile(pickTileNamed("r"), fp8, 7168, 2080).name; got != "r" {
		t.Errorf("resolveTile(r, fp8 with an intermediate of 2080) = %s, want r (no permutation)", got)
	}
	if got := resolveTile(pickTileNamed("y"), fp8, 7168, 2048).name; got != "y" {
		t.Errorf("resolveTile(y) = %s, want y (not a moe_wgra.cu tile)", got)
	}
}
