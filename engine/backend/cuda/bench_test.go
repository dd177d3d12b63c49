//go:build cuda

package cuda

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// filled returns a device buffer of n elements of dt holding random N(0, 1)
// values: a 1 Mi-element random block uploaded once and copied on the
// device to fill the rest (generating 64 Mi values on the host would
// dominate the benchmark's set-up).
func filled(b *testing.B, d *GPU, n int, dt tensor.DType) *driver.Buffer {
	b.Helper()
	rng := rand.New(rand.NewPCG(51, 52))
	blk := min(n, 1<<20)
	src := upload(b, d, randn(rng, blk, 1), dt)
	buf, err := d.Alloc(int64(n*dt.Size()), driver.Activations)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { buf.Free() })
	for off := 0; off < n; off += blk {
		m := min(blk, n-off)
		if err := d.CopyDevice(buf.Ptr().Add(int64(off*dt.Size())), src.Ptr(), int64(m*dt.Size())); err != nil {
			b.Fatal(err)
		}
	}
	return buf
}

// deviceTime runs f b.N times between timing events (after one warm-up
// call) and returns the device milliseconds per call.
func deviceTime(b *testing.B, d *GPU, f func() error) float64 {
	b.Helper()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	ms, err := d.Time(func() error {
		for range b.N {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ms / float64(b.N)
}

// BenchmarkGEMM8192BF16 times y = x·wᵀ with x, w, y [8192, 8192] bf16, f32
// accumulation; reports TFLOP/s (2·8192³ flops per call). H200 dense bf16
// peak is about 989 TFLOP/s; cuBLAS typically reaches 600-750.
func BenchmarkGEMM8192BF16(b *testing.B) {
	d := gpu(b)
	const n = 8192
	x, w, y := filled(b, d, n*n, tensor.BF16), filled(b, d, n*n, tensor.BF16), filled(b, d, n*n, tensor.BF16)
	ms := deviceTime(b, d, func() error { return d.Linear(y.Ptr(), x.Ptr(), w.Ptr(), n, n, n, tensor.BF16, tensor.BF16) })
	b.ReportMetric(2*n*n*n/(ms/1e3)/1e12, "TFLOP/s")
	b.ReportMetric(ms, "device-ms/op")
}

// BenchmarkMomentsBF16 times the statistics of a whole [8192, 7168] bf16
// tensor (DeepSeek-V3's hidden size), including the 72-byte readback and
// its synchronisation: the wall time per op is what `stats` costs a user.
// Reports the device time and the effective read bandwidth.
func BenchmarkMomentsBF16(b *testing.B) {
	d := gpu(b)
	const rows, cols = 8192, 7168
	x := filled(b, d, rows*cols, tensor.BF16)
	ms := deviceTime(b, d, func() error {
		_, err := d.Moments(x.Ptr(), tensor.BF16, rows, cols, 0, rows, 0, cols)
		return err
	})
	b.ReportMetric(ms, "device-ms/op")
	b.ReportMetric(rows*cols*2/(ms/1e3)/1e9, "GB/s")
}

// BenchmarkRMSNormBF16 times RMSNorm over [8192, 7168] bf16; reports the
// bandwidth of its read x, read w, write out.
func BenchmarkRMSNormBF16(b *testing.B) {
	d := gpu(b)
	const rows, cols = 8192, 7168
	x, w, out := filled(b, d, rows*cols, tensor.BF16), filled(b, d, cols, tensor.BF16), filled(b, d, rows*cols, tensor.BF16)
	ms := deviceTime(b, d, func() error { return d.RMSNorm(out.Ptr(), x.Ptr(), w.Ptr(), rows, cols, 1e-6, tensor.BF16) })
	b.ReportMetric(ms, "device-ms/op")
	b.ReportMetric(2*rows*cols*2/(ms/1e3)/1e9, "GB/s")
}

// attnBench times one layer's attention for a 4096-token prompt (one
// sequence) with 32 query and 8 KV heads of dim 128 (Llama-3-8B's), or the
// decode step of 64 sequences at position 4095; reports TFLOP/s of the
// causal score and value products.
func attnBench(b *testing.B, decode bool) {
	d := gpu(b)
	const ctx, heads, kvHeads, dim = 4096, 32, 8, 128
	var slots, pos []int32
	nslots := 1
	if decode {
		nslots = 64
		for s := range nslots {
			slots, pos = append(slots, int32(s)), append(pos, ctx-1)
		}
	} else {
		slots, pos = seqTokens(nil, nil, 0, 0, ctx)
	}
	batch, err := d.NewTokenBatch(slots, pos, nslots, ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { batch.Free() })
	kc := filled(b, d, nslots*ctx*kvHeads*dim, tensor.BF16)
	vc := filled(b, d, nslots*ctx*kvHeads*dim, tensor.BF16)
	q := filled(b, d, len(slots)*heads*dim, tensor.BF16)
	out := filled(b, d, len(slots)*heads*dim, tensor.BF16)
	p := AttnParams{Heads: heads, KVHeads: kvHeads, HeadDimK: dim, HeadDimV: dim, Scale: 0.088}
	ms := deviceTime(b, d, func() error { return d.Attention(out.Ptr(), q.Ptr(), kc.Ptr(), vc.Ptr(), batch, p, tensor.BF16) })
	var pairs float64 // (query, key) pairs attended
	for _, x := range pos {
		pairs += float64(x + 1)
	}
	b.ReportMetric(ms, "device-ms/op")
	b.ReportMetric(4*pairs*heads*dim/(ms/1e3)/1e12, "TFLOP/s")
}

func BenchmarkAttentionPrefill4096(b *testing.B)   { attnBench(b, false) }
func BenchmarkAttentionDecode64x4096(b *testing.B) { attnBench(b, true) }

// prefill4x1024 is the engine benchmark's prefill batch: 4 sequences of
// 1024 tokens from position 0, sequence s at cache rows s·1024.., with
// Llama-3-8B's attention shape (32 query and 8 KV heads of dim 128). pairs
// counts the (query, key) pairs causal attention visits: 4·1024·1025/2.
const (
	pfSeqs, pfLen, pfHeads, pfKVHeads, pfDim = 4, 1024, 32, 8, 128
	pfPairs                                  = pfSeqs * pfLen * (pfLen + 1) / 2
)

func prefill4x1024() (base, pos []int32) {
	for s := range pfSeqs {
		for i := range pfLen {
			base, pos = append(base, int32(s*pfLen)), append(pos, int32(i))
		}
	}
	return base, pos
}

// reportAttn reports device ms per call and TFLOP/s of the causal score
// and value products (2 GEMMs × 2 flops per multiply-add × pairs × heads ×
// dim). H200 dense bf16 peak is about 989 TFLOP/s; FlashAttention-2
// (mma.sync, no wgmma) reaches roughly 250-350 on an H100.
func reportAttn(b *testing.B, ms float64) {
	b.ReportMetric(ms, "device-ms/op")
	b.ReportMetric(4*float64(pfPairs)*pfHeads*pfDim/(ms/1e3)/1e12, "TFLOP/s")
}

// BenchmarkFlashAttentionPrefill times the fused kernel alone
// (GPU.FlashAttention, bf16) on one layer of the 4 × 1024-token prefill.
func BenchmarkFlashAttentionPrefill(b *testing.B) {
	p := AttnParams{Heads: pfHeads, KVHeads: pfKVHeads, HeadDimK: pfDim, HeadDimV: pfDim, Scale: 0.088}
	reportAttn(b, flashPrefillMs(b, p))
}

// BenchmarkFlashAttentionMLAPrefill is BenchmarkFlashAttentionPrefill at
// DeepSeek-V3's attention shape (128 heads, q·k over qk_nope + qk_rope =
// 192 dims, v_head_dim 128, one kv head per query head as MLA's prefill
// expands them); TFLOP/s counts 2·(192 + 128) flops per causal pair and
// head.
// Sub-benchmarks: wgmma (kernels/flash_wgmma.cu, the default on Hopper,
// on per-head key and value caches), kv_b (the same kernel reading
// kv_b_proj's output [tokens, heads·256] and the shared k_pe [tokens, 64]
// in place, GPU.FlashAttentionMLA; Hopper only), kv_b_lockstep (kv_b with
// the warpgroups in lockstep, flashPingPong "0") and mma
// (flash_attention.cu's mma.sync kernel, its peer); on Hopper it then
// prints the speed of the first two against the third.
func BenchmarkFlashAttentionMLAPrefill(b *testing.B) {
	p := AttnParams{Heads: 128, KVHeads: 128, HeadDimK: 192, HeadDimV: 128, Scale: 0.072}
	defer func(k, pp string) { flashWgmma, flashPingPong = k, pp }(flashWgmma, flashPingPong)
	ms := map[string]float64{}
	for _, kern := range []struct{ name, mode, pp string }{{"wgmma", "", ""}, {"kv_b", "", ""}, {"kv_b_lockstep", "", "0"}, {"mma", "0", ""}} {
		b.Run(kern.name, func(b *testing.B) {
			flashWgmma, flashPingPong = kern.mode, kern.pp
			if strings.HasPrefix(kern.name, "kv_b") {
				if !gpu(b).UseFlashAttentionMLA(tensor.BF16) {
					b.Skip("kernels/flash_wgmma.cu does not run on this device")
				}
				ms[kern.name] = flashMLAPrefillMs(b, p)
			} else {
				ms[kern.name] = flashPrefillMs(b, p)
			}
			b.ReportMetric(ms[kern.name], "device-ms/op")
			b.ReportMetric(2*float64(pfPairs)*float64(p.Heads*(p.HeadDimK+p.HeadDimV))/(ms[kern.name]/1e3)/1e12, "TFLOP/s")
		})
	}
	if gpu(b).hopper() && ms["wgmma"] > 0 && ms["mma"] > 0 {
		fmt.Printf("MLA prefill attention: flash_wgmma.cu %.3f ms, on kv_b_proj's output %.3f ms (lockstep %.3f), flash_attention.cu %.3f ms: %.2fx, %.2fx\n",
			ms["wgmma"], ms["kv_b"], ms["kv_b_lockstep"], ms["mma"], ms["mma"]/ms["wgmma"], ms["mma"]/ms["kv_b"])
	}
}

// flashMLAPrefillMs is flashPrefillMs for GPU.FlashAttentionMLA: keys and
// values read from a kv_b_proj output [tokens, heads·256] and k_pe
// [tokens, 64].
func flashMLAPrefillMs(b *testing.B, p AttnParams) float64 {
	d := gpu(b)
	base, pos := prefill4x1024()
	p.TileRows = flashWgmmaBM
	tiles := FlashTiles(base, pos, 0, p.TileRows)
	tb := uploadBytes(b, d, flashTileBytes(tiles))
	T := len(base)
	kv := filled(b, d, T*p.Heads*256, tensor.BF16)
	kPe := filled(b, d, T*64, tensor.BF16)
	q := filled(b, d, T*p.Heads*p.HeadDimK, tensor.BF16)
	out := filled(b, d, T*p.Heads*p.HeadDimV, tensor.BF16)
	return deviceTime(b, d, func() error {
		return d.FlashAttentionMLA(out.Ptr(), q.Ptr(), kv.Ptr(), kPe.Ptr(), tb.Ptr(), len(tiles), p, tensor.BF16)
	})
}

// flashPrefillMs returns the device ms of one GPU.FlashAttention call
// (bf16, attention shape p) on the 4 × 1024-token prefill, over filled
// q, k, v and output buffers.
func flashPrefillMs(b *testing.B, p AttnParams) float64 {
	d := gpu(b)
	base, pos := prefill4x1024()
	p.TileRows = d.FlashTileRows(tensor.BF16, p.HeadDimK, p.HeadDimV)
	tiles := FlashTiles(base, pos, 0, p.TileRows)
	tb := uploadBytes(b, d, flashTileBytes(tiles))
	T := len(base)
	kc := filled(b, d, T*p.KVHeads*p.HeadDimK, tensor.BF16)
	vc := filled(b, d, T*p.KVHeads*p.HeadDimV, tensor.BF16)
	q := filled(b, d, T*p.Heads*p.HeadDimK, tensor.BF16)
	out := filled(b, d, T*p.Heads*p.HeadDimV, tensor.BF16)
	return deviceTime(b, d, func() error {
		return d.FlashAttention(out.Ptr(), q.Ptr(), kc.Ptr(), vc.Ptr(), tb.Ptr(), len(tiles), p, tensor.BF16)
	})
}

// BenchmarkRankAttentionPrefill4x1024 times the backend op a bf16 model's
// layer calls (Device.Attention, output allocation and host-side set-up
// included) on the 4 × 1024-token prefill, with the fused kernel and with
// the GEMM path it replaces (HSDB_CUDA_FLASH=0: cuBLAS q·kᵀ, masked
// softmax, cuBLAS P·v).
func BenchmarkRankAttentionPrefill4x1024(b *testing.B) {
	g := gpu(b)
	base, pos := prefill4x1024()
	T := len(base)
	dev := newDevice(g, gpuMemory{g}, "bench", 0, tensor.BF16)
	b.Cleanup(func() { dev.Close() })
	tensorOf := func(rows, cols int) backend.Tensor {
		buf := filled(b, g, rows*cols, tensor.BF16)
		x := dev.Zeros(tensor.BF16, rows, cols).(*Tensor)
		if err := g.CopyDevice(x.ptr(), buf.Ptr(), int64(rows*cols*2)); err != nil {
			b.Fatal(err)
		}
		return x
	}
	q, k, v := tensorOf(T, pfHeads*pfDim), tensorOf(T, pfKVHeads*pfDim), tensorOf(T, pfKVHeads*pfDim)
	a := &backend.AttnArgs{Heads: pfHeads, KVHeads: pfKVHeads, DK: pfDim, DV: pfDim, Scale: 0.088, Base: base, Pos: pos}
	for _, path := range []string{"flash", "gemm"} {
		b.Run(path, func(b *testing.B) {
			flashAttn = path == "flash"
			defer func() { flashAttn = true }()
			reportAttn(b, deviceTime(b, g, func() error {
				dev.PushScope()
				dev.Attention(q, k, v, a)
				dev.PopScope()
				return nil
			}))
		})
	}
}

// BenchmarkStopMoments8Ranks times what a stop costs for `print
// hidden_states` at --tp 8 on one GPU: the statistics of a [8192, 7168]
// bf16 tensor (DeepSeek-V3's hidden size, 8192 tokens) on each of 8
// virtual ranks, one after the other as the REPL asks for them, each
// reading back only its 72-byte result. Reports wall milliseconds per stop
// (target: at most 5).
func BenchmarkStopMoments8Ranks(b *testing.B) {
	const world, rows, cols = 8, 8192, 7168
	g := gpu(b)
	devs := make([]*Device, world)
	xs := make([]*Tensor, world)
	for r := range world {
		devs[r] = newDevice(g, gpuMemory{g}, "bench", r, tensor.BF16)
		b.Cleanup(func() { devs[r].Close() })
		buf := filled(b, g, rows*cols, tensor.BF16)
		x := devs[r].Zeros(tensor.BF16, rows, cols).(*Tensor)
		if err := g.CopyDevice(x.ptr(), buf.Ptr(), int64(rows*cols*2)); err != nil {
			b.Fatal(err)
		}
		xs[r] = x
	}
	stop := func() {
		for r, d := range devs {
			if m := d.Moments(xs[r], 0, rows, 0, cols); m.Count != rows*cols {
				b.Fatalf("rank %d: count %d", r, m.Count)
			}
		}
	}
	stop()
	b.ResetTimer()
	for range b.N {
		stop()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/stop")
}
