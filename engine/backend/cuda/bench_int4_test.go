//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
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

// BenchmarkKimiMoEInt4 times the routed experts of Kimi-K2.5-shaped MoE
// layers (hidden 7168, 384 experts of moe_intermediate 2048, top-8, 2
// layers, random INT4 weights with bf16 group-32 scales) computed as
// engine/nn's MoE block computes them on the GPU (backend.MoE: Experts once
// at load, RoutedExperts per step on random top-8 routing), once with the
// weights kept packed (UploadQuantized) and once with the same checkpoint
// dequantized to bf16 on load, for several batch sizes, in one run. It
// prints device ms per forward of the two layers (the median of five runs
// of each form, alternating, each timing three forwards after the form ran
// alone for HSDB_BENCH_WARM_S seconds: benchWarm says why) and the speed of the
// packed path relative to bf16 (bf16 ms / int4 ms: ≥ 1 means packed is at
// least as fast), the packed path without its fused kernel for lightly
// routed experts, and the bytes per parameter the packed weights occupy.
// Needs about 90 GB of device memory. HSDB_BENCH_TOKENS=4096,5376 times
// those token counts instead; HSDB_BENCH_INT4_TILES=c,p also times the packed
// form on each named tile (mgTiles; the bf16 form keeps its default), the
// median of three runs each, to compare tiles in the same run.
//
//	.gpu/kimi/cuda.test -test.run '^$' -test.bench KimiMoEInt4 -test.benchtime 1x
func BenchmarkKimiMoEInt4(b *testing.B) {
	onlyTokens, int4Tiles := os.Getenv("HSDB_BENCH_TOKENS"), os.Getenv("HSDB_BENCH_INT4_TILES")
	for _, name := range strings.Split(int4Tiles, ",") {
		if name != "" && !slices.ContainsFunc(mgTiles, func(t mgTile) bool { return t.name == name }) {
			b.Fatalf("HSDB_BENCH_INT4_TILES: %q is not a tile (mgTiles)", name)
		}
	}
	counts := []int{1, 8, 64, 512, 2048, 4096, 8192}
	if onlyTokens != "" {
		counts = nil
		for _, f := range strings.Split(onlyTokens, ",") {
			T, err := strconv.Atoi(f)
			if err != nil || T <= 0 {
				b.Fatalf("HSDB_BENCH_TOKENS: %q is not a positive token count", f)
			}
			counts = append(counts, T)
		}
	}
	warm := benchWarm(b)
	devs, _ := virtualRanksOn(b, 1, tensor.BF16)
	d := devs[0]
	const H, I, E, K, layers, group = 7168, 2048, 384, 8, 2, 32
	rng := rand.New(rand.NewPCG(2026, 12))
	t0 := time.Now()
	pool := map[[2]int][]*tensor.Quantized{}
	for _, s := range [][2]int{{I, H}, {H, I}} {
		for range 3 {
			pool[s] = append(pool[s], randomInt4(rng, s[0], s[1], group, tensor.BF16))
		}
	}
	shapes := [3][2]int{{I, H}, {I, H}, {H, I}} // gate_proj, up_proj, down_proj
	var packed, dense [layers]backend.Tensor
	var packedBytes int64 // layer 0's packed experts on the device
	for l := range layers {
		m0 := d.MemoryInUse()
		var ws [3][]backend.Tensor
		for e := range E {
			for j, s := range shapes {
				ws[j] = append(ws[j], d.UploadQuantized(pool[s][(l*E+e+j)%3], tensor.Invalid))
			}
		}
		packed[l] = d.Experts(0, ws[0], ws[1], ws[2])
		if l == 0 {
			packedBytes = d.MemoryInUse() - m0
		}
		var ds [3][]backend.Tensor
		for j := range 3 {
			for _, w := range ws[j] {
				ds[j] = append(ds[j], dequantOnDevice(b, d, w.(*Tensor)))
			}
		}
		dense[l] = d.Experts(0, ds[0], ds[1], ds[2])
	}
	perLayer := int64(E) * 3 * H * I
	fmt.Printf("set-up %.1fs; packed experts %.4f byte/param (%d bytes for one layer's %d params)\n",
		time.Since(t0).Seconds(), float64(packedBytes)/float64(perLayer), packedBytes, perLayer)
	b.ReportMetric(float64(packedBytes)/float64(perLayer), "int4-byte/param")

	fmt.Printf("%7s %12s %10s %10s %8s  %s\n", "tokens", "tok/expert", "bf16 ms", "int4 ms", "speed", "int4 without the fused kernel (ms)")
	oldTile := moeTile
	defer func() { moeTile = oldTile }()
	for _, T := range counts {
		x := d.Upload(tensor.FromF32(randn(rng, T*H, 1), T, H).Convert(tensor.BF16))
		ids, wts := randomTopK(rng, T, E, K)
		it, wt := d.Upload(ids), d.Upload(wts)
		run := func(sets *[layers]backend.Tensor) float64 {
			step := func() error {
				for l := range layers {
					d.PushScope()
					d.RoutedExperts(x, it, wt, sets[l])
					d.PopScope()
				}
				return nil
			}
			settle(b, d, warm, step)
			const iters = 3
			ms, err := d.g.Time(func() error {
				for range iters {
					if err := step(); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			return ms / iters
		}
		// Five rounds, bf16 and packed alternating, and the median of
		// each: one pair of runs varied by up to 10 % between calls.
		var dms, pms []float64
		for range 5 {
			dms, pms = append(dms, run(&dense)), append(pms, run(&packed))
		}
		slices.Sort(dms)
		slices.Sort(pms)
		msDense, msPacked := dms[2], pms[2]
		saved := int4GEMVTokens
		int4GEMVTokens = 0
		msNoGEMV := run(&packed)
		int4GEMVTokens = saved
		fmt.Printf("%7d %12.2f %10.2f %10.2f %7.2fx  %.2f\n", T, float64(T*K)/E, msDense, msPacked, msDense/msPacked, msNoGEMV)
		b.ReportMetric(msDense/msPacked, fmt.Sprintf("speed-vs-bf16-T%d", T))
		if n, _ := strconv.Atoi(os.Getenv("HSDB_BENCH_SERIES")); n > 0 {
			series(b, d, T, n, func(sets *[layers]backend.Tensor) func() error {
				return func() error {
					for l := range layers {
						d.PushScope()
						d.RoutedExperts(x, it, wt, sets[l])
						d.PopScope()
					}
					return nil
				}
			}, &dense, &packed)
		}
		for _, name := range strings.Split(int4Tiles, ",") {
			if name == "" {
				continue
			}
			var tms []float64
			for range 3 {
				moeTile = name
				tms = append(tms, run(&packed))
				moeTile = oldTile
			}
			slices.Sort(tms)
			fmt.Printf("%7d   int4 on tile %-3s %10.2f ms %7.2fx bf16\n", T, name, tms[1], msDense/tms[1])
		}
		d.Free(x)
		d.Free(it)
		d.Free(wt)
	}
}

// series prints the device ms of single forwards, n of the bf16 form, n
// packed, n bf16, n packed, in that order (HSDB_BENCH_SERIES=n): how a
// form's time changes right after the other form ran.
func series[S any](b *testing.B, d *Device, T, n int, step func(*S) func() error, dense, packed *S) {
	for _, f := range []struct {
		name string
		sets *S
	}{{"bf16", dense}, {"int4", packed}, {"bf16", dense}, {"int4", packed}} {
		var ms []string
		for range n {
			t, err := d.g.Time(step(f.sets))
			if err != nil {
				b.Fatal(err)
			}
			ms = append(ms, fmt.Sprintf("%.2f", t))
		}
		fmt.Printf("%7d series %s: %s\n", T, f.name, strings.Join(ms, " "))
	}
}

// benchWarm is HSDB_BENCH_WARM_S, the seconds of device time a benchmark
// runs one form before timing it (default 1). At thousands of routed
// tokens an H200 runs these layers at its power limit (700 W; nvidia-smi
// reports the SW power cap and SM clocks of 1.1-1.7 GHz) and its
// controller needs a few hundred ms to settle after the work changes:
// timed right after the bf16 form, the packed form's first forwards at
// 8192 tokens took 30.5, 28.1, 27.0 ms before settling at 26.4, and the
// bf16 form's right after the packed one 25.1, 26.2, 27.5 before 27.7-28.3
// (HSDB_BENCH_SERIES=8, one run). A capture job runs one form for hours,
// so each form is timed in its own settled state.
func benchWarm(b *testing.B) float64 {
	s := os.Getenv("HSDB_BENCH_WARM_S")
	if s == "" {
		return 1
	}
	w, err := strconv.ParseFloat(s, 64)
	if err != nil || w < 0 {
		b.Fatalf("HSDB_BENCH_WARM_S: %q is not a number of seconds >= 0", s)
	}
	return w
}

// settle runs step alone for warm seconds of device time, at least once
// (pool, cuBLAS heuristics), so that the power limiter's clock has settled
// on its draw before it is timed (benchWarm).
func settle(b *testing.B, d *Device, warm float64, step func() error) {
	for w := 0.0; ; {
		ms, err := d.g.Time(step)
		if err != nil {
			b.Fatal(err)
		}
		if w += ms / 1e3; w >= warm {
			return
		}
	}
}

// dequantOnDevice returns a persistent bf16 copy of packed weight w: the
// same checkpoint dequantized on load.
func dequantOnDevice(b *testing.B, d *Device, w *Tensor) backend.Tensor {
	L := int4Of(w)
	x, err := d.newTensor(tensor.BF16, []int{L.out, L.in}, driver.Weights, false)
	if err != nil {
		b.Fatal(err)
	}
	d.do("dequant", func() error { return d.g.Int4Dequant(x.ptr(), w.ptr(), w.ptr().Add(L.scaleOff), L, tensor.BF16) })
	return x
}

// randomTopK picks k distinct experts per token uniformly with random
// weights: ids [tokens, k] I32 and weights [tokens, k] F32 (Route's output).
func randomTopK(rng *rand.Rand, tokens, experts, k int) (*tensor.Tensor, *tensor.Tensor) {
	ids := tensor.New(tensor.I32, tokens, k)
	w := make([]float32, tokens*k)
	for t := range tokens {
		for j, e := range rng.Perm(experts)[:k] {
			binary.LittleEndian.PutUint32(ids.Data[4*(t*k+j):], uint32(e))
			w[t*k+j] = float32(rng.Float64())
		}
	}
	return ids, tensor.FromF32(w, tokens, k)
}

// BenchmarkInt4Linear times one Linear on Kimi-K2.5's expert shapes
// (gate/up [2048, 7168], down [7168, 2048]) with the weight packed and the
// same weight in bf16, for several token counts, 20 calls each: the kernels
// alone, without the MoE block's gathers and scatters. Prints device µs per
// call, bf16 µs / int4 µs, and each int4 path forced (fused, scratch).
func BenchmarkInt4Linear(b *testing.B) {
	devs, _ := virtualRanksOn(b, 1, tensor.BF16)
	d := devs[0]
	rng := rand.New(rand.NewPCG(7, 8))
	fmt.Printf("%14s %7s %10s %10s %8s %12s %12s\n", "weight", "tokens", "bf16 µs", "int4 µs", "speed", "fused µs", "scratch µs")
	for _, s := range [][2]int{{2048, 7168}, {7168, 2048}} {
		pw := d.UploadQuantized(randomInt4(rng, s[0], s[1], 32, tensor.BF16), tensor.Invalid)
		bw := dequantOnDevice(b, d, pw.(*Tensor))
		for _, T := range []int{1, 2, 4, 8, 16, 32, 64, 128, 512} {
			x := d.Upload(tensor.FromF32(randn(rng, T*s[1], 1), T, s[1]).Convert(tensor.BF16))
			timeUS := func(w backend.Tensor) float64 {
				const iters = 20
				call := func() error {
					d.PushScope()
					d.Linear(x, w, nil)
					d.PopScope()
					return nil
				}
				_ = call()
				ms, err := d.g.Time(func() error {
					for range iters {
						_ = call()
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				return ms * 1000 / iters
			}
			usB, usP := timeUS(bw), timeUS(pw)
			saved := int4GEMVTokens
			int4GEMVTokens = 1 << 30
			usF := timeUS(pw)
			int4GEMVTokens = 0
			usS := timeUS(pw)
			int4GEMVTokens = saved
			fmt.Printf("%14s %7d %10.1f %10.1f %7.2fx %12.1f %12.1f\n", fmt.Sprint(s), T, usB, usP, usB/usP, usF, usS)
			d.Free(x)
		}
		d.Free(pw)
		d.Free(bw)
	}
}
