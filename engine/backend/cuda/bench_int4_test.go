//go:build cuda

package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// BenchmarkKimiMoEInt4 times the routed experts of Kimi-K2.5-shaped MoE
// layers (hidden 7168, 384 experts of moe_intermediate 2048, top-8, 2
// layers, random INT4 weights with bf16 group-32 scales) computed the way
// engine/arch's MoE block computes them (per expert: GatherRows, gate and up
// Linear, SiluMul, down Linear, ScatterAddRows), once with the weights
// kept packed (UploadQuantized) and once with the same checkpoint
// dequantized to bf16 on load, for several batch sizes, in one run. It
// prints device ms per forward of the two layers and the speed of the
// packed path relative to bf16 (bf16 ms / int4 ms: ≥ 1 means packed is at
// least as fast), plus the variants of the packed path (fused kernel off,
// scratch in 8 MiB blocks), and the bytes per parameter the packed weights
// occupy. Needs about 90 GB of device memory.
//
//	scripts: .gpu/kimi/cuda.test -test.run '^$' -test.bench KimiMoEInt4 -test.benchtime 1x
func BenchmarkKimiMoEInt4(b *testing.B) {
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
	var packed, dense [layers][E][3]backend.Tensor
	before := d.MemoryInUse()
	for l := range layers {
		for e := range E {
			for j, s := range shapes {
				packed[l][e][j] = d.UploadQuantized(pool[s][(l*E+e+j)%3], tensor.Invalid)
			}
		}
	}
	packedBytes := d.MemoryInUse() - before
	params := int64(layers) * E * 3 * H * I
	for l := range layers {
		for e := range E {
			for j := range 3 {
				dense[l][e][j] = dequantOnDevice(b, d, packed[l][e][j].(*Tensor))
			}
		}
	}
	denseBytes := d.MemoryInUse() - before - packedBytes
	fmt.Printf("set-up %.1fs; packed weights %.4f byte/param (%d bytes for %d params); bf16 copy %.4f byte/param\n",
		time.Since(t0).Seconds(), float64(packedBytes)/float64(params), packedBytes, params, float64(denseBytes)/float64(params))
	b.ReportMetric(float64(packedBytes)/float64(params), "int4-byte/param")

	fmt.Printf("%7s %12s %10s %10s %8s  %s\n", "tokens", "tok/expert", "bf16 ms", "int4 ms", "speed", "variants (int4 ms)")
	for _, T := range []int{1, 8, 64, 512, 2048, 8192} {
		x := d.Upload(tensor.FromF32(randn(rng, T*H, 1), T, H).Convert(tensor.BF16))
		routes, weights := randomRoutes(rng, T, E, K)
		run := func(w *[layers][E][3]backend.Tensor) float64 {
			step := func() error {
				for l := range layers {
					moeExperts(d, x, &w[l], routes, weights)
				}
				return nil
			}
			_ = step() // warm-up (pool, cuBLAS heuristics)
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
		msDense, msPacked := run(&dense), run(&packed)
		variants := ""
		if T*K/E <= int4GEMVTokens {
			saved := int4GEMVTokens
			int4GEMVTokens = 0
			variants += fmt.Sprintf("dequant+GEMM only %.2f", run(&packed))
			int4GEMVTokens = saved
		}
		if T*K/E >= 1 {
			saved := int4ChunkBytes
			int4ChunkBytes = 8 << 20
			variants += fmt.Sprintf("  scratch in 8 MiB blocks %.2f", run(&packed))
			int4ChunkBytes = saved
		}
		fmt.Printf("%7d %12.2f %10.2f %10.2f %7.2fx  %s\n", T, float64(T*K)/E, msDense, msPacked, msDense/msPacked, variants)
		b.ReportMetric(msDense/msPacked, fmt.Sprintf("speed-vs-bf16-T%d", T))
		d.Free(x)
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

// randomRoutes picks k distinct experts per token uniformly with random
// weights: per expert the tokens routed to it and their weights.
func randomRoutes(rng *rand.Rand, tokens, experts, k int) ([][]int32, [][]float32) {
	routes, weights := make([][]int32, experts), make([][]float32, experts)
	for t := range tokens {
		for _, e := range rng.Perm(experts)[:k] {
			routes[e] = append(routes[e], int32(t))
			weights[e] = append(weights[e], float32(rng.Float64()))
		}
	}
	return routes, weights
}

// moeExperts runs one layer's routed experts on x [tokens, hidden] as
// engine/arch's MoE block does and leaves the sum in a scoped accumulator.
func moeExperts(d *Device, x backend.Tensor, w *[384][3]backend.Tensor, routes [][]int32, weights [][]float32) {
	d.PushScope()
	acc := d.Alloc(x.Shape()...)
	for e, idx := range routes {
		if len(idx) == 0 {
			continue
		}
		xe := d.GatherRows(x, idx)
		h := d.SiluMul(d.Linear(xe, w[e][0], nil), d.Linear(xe, w[e][1], nil))
		d.ScatterAddRows(acc, d.Linear(h, w[e][2], nil), idx, weights[e])
	}
	d.PopScope()
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
