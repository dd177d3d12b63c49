//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// Block-scaled fp8 weights kept on the GPU (tensor.QuantFP8Block:
// DeepSeek-V3's float8_e4m3fn weight with a float32 weight_scale_inv per
// 128×128 block): one byte per parameter plus 4 bytes per block, where the
// bf16 copy would take two. DeepSeek-V3 in bf16 is 1.34 TB and fits no
// 8×H200 node; in fp8 it is about 84 GB per rank at tp 8.
//
// Linear on such a weight widens it with kernels/fp8.cu's
// fp8_dequant_batch into a scratch of the activation dtype, freed right
// after the cuBLAS GEMM that reads it (the pool hands the block to the next
// weight), as vLLM's dequantize-then-GEMM fallbacks do. The routed experts
// (RoutedExperts) run on the grouped kernels (rank_moe_grouped.go,
// kernels/moe_gemm.cu and, on Hopper, kernels/moe_wgra.cu: each weight
// tile widened on the fly, one byte read per weight): on Hopper at
// every size, elsewhere up to 192 routed rows per expert; above, and with
// HSDB_MOE_GEMM=cublas, they widen a chunk of experts per launch into a
// scratch of at most fp8ChunkBytes. Activations stay in their dtype (no
// fp8 activation quantization), so results equal the checkpoint
// dequantized on load: f32(q)·scale computed exactly, rounded once to the
// activation dtype (TestMoEGEMMWidensFP8Exactly checks every tile bit for
// bit). With --w8a8 (rank_w8a8.go) the linears instead run cuBLASLt's
// block-scaled fp8 GEMM on activations quantized to fp8, as vLLM does.
//
// Measured on one H200 (BenchmarkMoEGrouped, DeepSeek-V3's experts, one
// layer, ms): at 4096 tokens (128 rows per expert) fp8 on moe_wgra.cu's c
// tile 8.1 (k permuted in blocks of 64; 9.1 two stops before) against
// 7.3-7.9 for the same experts in bf16 (moe_wgmma.cu's y) and 26 widening
// to a scratch; at 2048 tokens (64 rows) fp8 6.5 on r
// against bf16's 6.3-6.5, at 512 tokens 5.4 on h against 6.0. Widening
// in the kernel costs issue slots and shared-memory bandwidth that the
// bf16 tiles do not spend, so fp8 stays slower than bf16 where the GEMMs
// are bound by the tensor cores (a few thousand tokens and more) and is
// as fast or faster below, where reading half the bytes counts. The
// DeepSeek-V3-shaped prefill (scripts/bench/bench-deepseek.sh's model, 4 ×
// 1024 tokens, its own uneven routing, each timing after a second of the
// same prefills) with the fp8 experts forced onto each tile
// (HSDB_MOE_TILE), median ms of ten: c (the default) 22.61 and 22.77, p
// 23.74 and 23.21, r 25.21, h 27.54; the bf16 checkpoint 21.79 and 21.64.
// At these sizes the H200 runs at its 700 W power limit (nvidia-smi: SW
// power cap, SM clocks 1.1-1.8 GHz), so the forms compare by energy per
// prefill: fp8 saves HBM reads and spends ALU work on every widened value.

// fp8ChunkBytes bounds the scratch RoutedExperts widens fp8 experts into.
var fp8ChunkBytes int64 = 2 << 30

// fp8Layout is how one fp8 weight lies in its storage: the fp8 bytes [out,
// in] first, then the f32 scales [ceil(out/bh), ceil(in/bw)] at scaleOff.
type fp8Layout struct {
	out, in, bh, bw int
	scaleOff        int64
}

// uploadFP8 copies q's fp8 data and its scales (as f32) into one persistent
// allocation (class weights, nothing widened) and returns a tensor of
// logical shape [out, in] and dtype F8E4M3 that Linear and Experts
// recognize.
func (d *Device) uploadFP8(q *tensor.Quantized) backend.Tensor {
	const op = "upload fp8"
	if err := q.Check(); err != nil {
		d.badArg(op, "%v", err)
	}
	out, in := q.Shape[0], q.Shape[1]
	L := &fp8Layout{out: out, in: in, bh: q.Block[0], bw: q.Block[1]}
	scale := q.Scale
	if scale.DType != tensor.F32 {
		scale = scale.Convert(tensor.F32) // bf16/f16 scales widen exactly
	}
	L.scaleOff = (int64(len(q.Data.Data)) + 255) &^ 255
	total := L.scaleOff + int64(len(scale.Data))
	x, err := d.newTensor(tensor.F8E4M3, []int{int(total)}, driver.Weights, false)
	if err == nil {
		buf := make([]byte, total)
		copy(buf, q.Data.Data)
		copy(buf[L.scaleOff:], scale.Data)
		if err = d.mem.copyIn(x.ptr(), buf); err != nil {
			d.Free(x)
		}
	}
	if err != nil {
		panic(d.fail(op, fmt.Errorf("[%d, %d] in %d×%d blocks: %w", out, in, L.bh, L.bw, err)))
	}
	x.shape = []int{out, in}
	x.st.fp8 = L
	return x
}

// fp8Of returns the fp8 layout of weight w, or nil for any other tensor:
// the dispatch point for ops that take weights.
func fp8Of(w *Tensor) *fp8Layout { return w.st.fp8 }

// fp8Vec reports whether fp8_dequant_batch may widen 8 elements at a time
// for weights of layout L (the data base is 256-byte aligned, outputs come
// from the pool).
func fp8Vec(L *fp8Layout) bool {
	return L.in%8 == 0 && L.bw%8 == 0 && int64(L.out)*int64(L.in)/8 < 1<<32
}

// fp8Widen widens the fp8 weights ws (one layout L) into out [len(ws),
// L.out, L.in] of dtype dt with one launch (GPU thread).
func (d *Device) fp8Widen(out driver.Ptr, ws []*Tensor, L *fp8Layout, dt tensor.DType) error {
	if len(ws) == 0 {
		return nil
	}
	addr, err := d.mem.alloc(int64(16*len(ws)), driver.Activations) // the kernel's address arrays
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{addr, driver.Activations}})
	buf := make([]byte, 0, 16*len(ws))
	for _, w := range ws {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(w.ptr()))
	}
	for _, w := range ws {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(w.ptr().Add(L.scaleOff)))
	}
	if err := d.g.CopyToDevice(addr, buf); err != nil {
		return err
	}
	return d.g.FP8DequantBatch(out, addr, addr.Add(int64(8*len(ws))), len(ws), L.out, L.in, L.bh, L.bw, fp8Vec(L), dt)
}

// linearFP8 computes y = x·Wᵀ for fp8 W: W widened into a scratch of x's
// dtype, one cuBLAS GEMM, the scratch freed. x is [tokens, in]; there is no
// bias (no DeepSeek or Kimi linear has one; a biased linear is stored
// dense).
func (d *Device) linearFP8(op string, xt, wt *Tensor, b backend.Tensor) backend.Tensor {
	L := fp8Of(wt)
	d.float(op, xt)
	if !isNil(b) {
		d.badArg(op, "fp8 weight [%d, %d] with a bias is not supported", L.out, L.in)
	}
	T, in := xt.rows(), xt.cols()
	if in != L.in {
		d.badArg(op, "x %v and fp8 weight [%d, %d]: inner dims %d != %d", xt.shape, L.out, L.in, in, L.in)
	}
	dt := xt.dt
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(dt, T, L.out); err != nil || T == 0 || L.out == 0 {
			return err
		}
		if d.w8a8Takes(L, dt) {
			return d.linearW8A8(y, xt, wt, L, T)
		}
		scratch, err := d.mem.alloc(int64(L.out)*int64(L.in)*int64(dt.Size()), driver.Activations)
		if err != nil {
			return err
		}
		defer d.mem.free([]block{{scratch, driver.Activations}})
		if err := d.fp8Widen(scratch, []*Tensor{wt}, L, dt); err != nil {
			return err
		}
		return d.g.Linear(y.ptr(), xt.ptr(), scratch, T, in, L.out, dt, dt)
	})
	return y
}

// fp8ToHost copies rows [r0,r1) × columns [c0,c1) of fp8 weight x to the
// host as f32: widened on the device, then sliced.
func (d *Device) fp8ToHost(x *Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	L := fp8Of(x)
	var tmp *Tensor
	d.do("to_host", func() error {
		var err error
		if tmp, err = d.output(tensor.F32, L.out, L.in); err != nil {
			return err
		}
		return d.fp8Widen(tmp.ptr(), []*Tensor{x}, L, tensor.F32)
	})
	defer d.Free(tmp)
	return d.ToHost(tmp, r0, r1, c0, c1)
}

// fp8Experts are a MoE layer's routed experts kept in fp8: per expert the
// gate and up weights (widened together into one [2·inter, hidden] w13 per
// expert) and down.
type fp8Experts struct {
	gateUp []*Tensor // gate_0, up_0, gate_1, up_1, ...
	down   []*Tensor
	l13    *fp8Layout // gate's and up's layout
	l2     *fp8Layout
}

// fp8ExpertSet checks that gate, up and down are fp8 weights of one layout
// each and returns them as an fp8Experts, or nil when gate[0] is not fp8.
func (d *Device) fp8ExpertSet(op string, first int, gate, up, down []*Tensor) *fp8Experts {
	if fp8Of(gate[0]) == nil {
		return nil
	}
	l13, l2 := fp8Of(gate[0]), fp8Of(down[0])
	if l2 == nil {
		d.badArg(op, "expert %d: gate_proj is fp8 but down_proj is %s", first, down[0].dt)
	}
	e := &fp8Experts{l13: l13, l2: l2}
	for i := range gate {
		for _, w := range []*Tensor{gate[i], up[i]} {
			if L := fp8Of(w); L == nil || *L != *l13 {
				d.badArg(op, "expert %d: gate_proj/up_proj %v %s not in gate_proj 0's fp8 layout %+v", first+i, w.shape, w.dt, *l13)
			}
		}
		if L := fp8Of(down[i]); L == nil || *L != *l2 {
			d.badArg(op, "expert %d: down_proj %v %s not in down_proj 0's fp8 layout %+v", first+i, down[i].shape, down[i].dt, *l2)
		}
		e.gateUp = append(e.gateUp, gate[i], up[i])
		e.down = append(e.down, down[i])
	}
	return e
}

// fp8ExpertGEMMs is ExpertGEMMs over fp8 experts (GPU thread): chunk by
// chunk of experts whose widened weights fit fp8ChunkBytes, the chunk's
// weights (ws: per expert wPer tensors of layout L, stacked into [N, K]
// per expert) are widened into scratch and multiplied. addr holds 24·n
// bytes (ExpertGEMMs' address arrays).
func (d *Device) fp8ExpertGEMMs(c, a driver.Ptr, ws []*Tensor, wPer int, L *fp8Layout, rows []int32, N, K int, dt tensor.DType, addr driver.Ptr) error {
	es := int64(dt.Size())
	per := int64(N) * int64(K) * es
	n := len(rows)
	chunk := int(max(1, min(int64(n), fp8ChunkBytes/per)))
	scratch, err := d.mem.alloc(int64(chunk)*per, driver.Activations)
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{scratch, driver.Activations}})
	off := int64(0)
	for c0 := 0; c0 < n; c0 += chunk {
		c1 := min(n, c0+chunk)
		if err := d.fp8Widen(scratch, ws[c0*wPer:c1*wPer], L, dt); err != nil {
			return err
		}
		wp := make([]driver.Ptr, c1-c0)
		cnt := int64(0)
		for i := range wp {
			wp[i] = scratch.Add(int64(i) * per)
			cnt += int64(rows[c0+i])
		}
		if err := d.g.ExpertGEMMs(c.Add(off*int64(N)*es), a.Add(off*int64(K)*es), wp, rows[c0:c1], N, K, dt, addr); err != nil {
			return err
		}
		off += cnt
	}
	return nil
}
