//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// BenchmarkMoEGrouped times one MoE layer's routed experts (RoutedExperts
// on random top-8 routing) at real widths on one GPU, in one run, for two
// checkpoints: DeepSeek-V3's experts (hidden 7168, 256 experts of 2048)
// stored in fp8 with 128×128 block scales, and Kimi-K2.5's (384 experts of
// 2048) packed in int4 with bf16 group-32 scales; each also dequantized to
// bf16 on load (the same values rounded once). For each token count it
// prints device ms per layer of the bf16 experts and of the stored form,
// each on the cuBLAS path (HSDB_MOE_GEMM=cublas: per-expert GEMMs after a
// host copy of the counts; fp8 widened to a bf16 scratch, int4 through
// its fused GEMV or dequantized to a scratch), on the grouped kernel with
// each tile configuration (mgTiles: s, m, l, x on mma.sync; w on wgmma
// where the device has it; HSDB_BENCH_TILES=s,w: only the tiles named;
// HSDB_BENCH_MODELS=Kimi: only the checkpoints whose name holds it;
// HSDB_BENCH_TOKENS=4096,8192: only those token counts)
// and on the default choice; then the speed of the defaults against bf16
// on cuBLAS and of the stored form's default against bf16's default (>= 1: faster), and
// the largest relative difference of the kernel's outputs from cuBLAS's
// on the bf16 experts. Each timing follows HSDB_BENCH_WARM_S seconds of
// the same step (benchWarm). Needs about 45 GB of device memory.
//
//	cuda.test -test.run '^$' -test.bench MoEGrouped -test.benchtime 1x
func BenchmarkMoEGrouped(b *testing.B) {
	warm := benchWarm(b)
	devs, _ := virtualRanksOn(b, 1, tensor.BF16)
	d := devs[0]
	oldMode, oldTile := moeGEMMMode, moeTile
	defer func() { moeGEMMMode, moeTile = oldMode, oldTile }()
	const H, I, K = 7168, 2048, 8
	rng := rand.New(rand.NewPCG(2026, 10))
	models := []struct {
		name  string
		E     int
		quant func(rows, cols int) *tensor.Quantized
	}{
		{"DeepSeek-V3 experts, fp8 128x128", 256, func(r, c int) *tensor.Quantized { return randomFP8(rng, r, c, 128, 128) }},
		{"Kimi-K2.5 experts, int4 group 32", 384, func(r, c int) *tensor.Quantized { return randomInt4(rng, r, c, 32, tensor.BF16) }},
	}
	onlyModels, onlyTokens := os.Getenv("HSDB_BENCH_MODELS"), os.Getenv("HSDB_BENCH_TOKENS") // e.g. "Kimi", "4096,8192"
	for _, m := range models {
		if onlyModels != "" && !strings.Contains(m.name, onlyModels) {
			continue
		}
		t0 := time.Now()
		pool := map[[2]int][]*tensor.Quantized{}
		for _, s := range [][2]int{{I, H}, {H, I}} {
			for range 2 {
				pool[s] = append(pool[s], m.quant(s[0], s[1]))
			}
		}
		shapes := [3][2]int{{I, H}, {I, H}, {H, I}}
		var ws, ds [3][]backend.Tensor
		for e := range m.E {
			for j, s := range shapes {
				w := d.UploadQuantized(pool[s][(e+j)%2], tensor.Invalid)
				ws[j] = append(ws[j], w)
				ds[j] = append(ds[j], denseOnDevice(b, d, w.(*Tensor)))
			}
		}
		packed := d.Experts(0, ws[0], ws[1], ws[2]).(*expertSet)
		dense := d.Experts(0, ds[0], ds[1], ds[2]).(*expertSet)
		if packed.gw == nil || dense.gw == nil {
			b.Fatalf("%s: the grouped kernel does not take the expert sets", m.name)
		}
		fmt.Printf("\n%s: %d experts [%d, %d], top %d, one layer; set-up %.1fs\n", m.name, m.E, I, H, K, time.Since(t0).Seconds())
		var tiles []mgTile
		only := os.Getenv("HSDB_BENCH_TILES") // e.g. "w,r": time only these tiles
		for _, t := range mgTiles {
			if (!t.wg || d.hopper()) && (only == "" || slices.Contains(strings.Split(only, ","), t.name)) {
				tiles = append(tiles, t)
			}
		}
		head := fmt.Sprintf("%6s %8s", "tokens", "rows/exp")
		for _, form := range []string{"bf16 cuBL", "q before"} {
			head += fmt.Sprintf(" | %9s", form)
			for _, t := range tiles {
				head += fmt.Sprintf(" %7s", "k"+t.name)
			}
			head += fmt.Sprintf(" %7s", "def")
		}
		fmt.Printf("%s | %6s %6s %6s | %8s %8s\n", head, "bf16x", "qx", "q/bdef", "bf16 err", "q err")
		for _, T := range []int{1, 8, 64, 512, 2048, 4096, 8192} {
			if onlyTokens != "" && !slices.Contains(strings.Split(onlyTokens, ","), strconv.Itoa(T)) {
				continue
			}
			x := d.Upload(tensor.FromF32(randn(rng, T*H, 1), T, H).Convert(tensor.BF16))
			ids, wts := randomTopK(rng, T, m.E, K)
			it, wt := d.Upload(ids), d.Upload(wts)
			out := func(set *expertSet, mode, tile string) []float32 {
				moeGEMMMode, moeTile = mode, tile
				d.PushScope()
				defer d.PopScope()
				return d.ToHost(d.RoutedExperts(x, it, wt, set), 0, T, 0, H).F32()
			}
			run := func(set *expertSet, mode, tile string) float64 {
				moeGEMMMode, moeTile = mode, tile
				step := func() error {
					d.PushScope()
					d.RoutedExperts(x, it, wt, set)
					d.PopScope()
					return nil
				}
				settle(b, d, warm, step)
				const iters = 3
				ms, err := d.g.Time(func() error {
					for range iters {
						_ = step()
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				return ms / iters
			}
			var row [2][]float64 // cuBLAS path, each tile, the default
			for si, set := range []*expertSet{dense, packed} {
				row[si] = append(row[si], run(set, "cublas", ""))
				for _, tile := range tiles {
					row[si] = append(row[si], run(set, "kernel", tile.name))
				}
				row[si] = append(row[si], run(set, "", ""))
			}
			ref := out(dense, "cublas", "")
			errB := relDiff(out(dense, "kernel", ""), ref)
			errQ := relDiff(out(packed, "kernel", ""), ref)
			line := fmt.Sprintf("%6d %8.2f", T, float64(T*K)/float64(m.E))
			for si := range row {
				line += fmt.Sprintf(" | %9.3f", row[si][0])
				for _, v := range row[si][1:] {
					line += fmt.Sprintf(" %7.3f", v)
				}
			}
			def := len(tiles) + 1
			fmt.Printf("%s | %5.2fx %5.2fx %5.2fx | %8.2g %8.2g\n", line,
				row[0][0]/row[0][def], row[0][0]/row[1][def], row[0][def]/row[1][def], errB, errQ)
			d.Free(x)
			d.Free(it)
			d.Free(wt)
		}
		freeExpertSet(d, packed)
		freeExpertSet(d, dense)
	}
}

// relDiff returns max|a−b| / max|b| (NaN for a length mismatch, NaN in
// either, or an all-zero b).
func relDiff(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.NaN()
	}
	var d, m float64
	for i := range a {
		x := math.Abs(float64(a[i]) - float64(b[i]))
		if x != x {
			return math.NaN() // a later finite x must not replace it
		}
		d = max(d, x)
		m = max(m, math.Abs(float64(b[i])))
	}
	if !(m > 0) {
		return math.NaN()
	}
	return d / m
}

// denseOnDevice returns a persistent bf16 copy of quantized weight w (fp8
// or int4): the same checkpoint dequantized on load.
func denseOnDevice(b *testing.B, d *Device, w *Tensor) backend.Tensor {
	if int4Of(w) != nil {
		return dequantOnDevice(b, d, w)
	}
	L := fp8Of(w)
	x, err := d.newTensor(tensor.BF16, []int{L.out, L.in}, driver.Weights, false)
	if err != nil {
		b.Fatal(err)
	}
	d.do("widen", func() error { return d.fp8Widen(x.ptr(), []*Tensor{w}, L, tensor.BF16) })
	return x
}

// freeExpertSet frees every device tensor of set.
func freeExpertSet(d *Device, set *expertSet) {
	var ts []*Tensor
	ts = append(append(ts, set.w13...), set.w2...)
	if set.q != nil {
		ts = append(append(ts, set.q.gateUp...), set.q.down...)
	}
	if set.q4 != nil {
		ts = append(append(ts, set.q4.gateUp...), set.q4.down...)
	}
	if set.gw != nil {
		ts = append(ts, set.gw.addr)
	}
	for _, t := range ts {
		d.Free(t)
	}
}
