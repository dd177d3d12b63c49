//go:build cuda

package cuda

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// INT4 weights kept packed on the GPU (W4A16): compressed-tensors'
// pack-quantized group-scaled int4 (tensor.QuantInt4Group), as Kimi-K2-
// Thinking and Kimi-K2.5 store their routed experts. A 1 T-parameter model
// would need 2 TB in bf16; packed it needs 0.5 byte per parameter plus one
// bf16 scale per group of 32 (0.5625 byte in all).
//
// Linear on such a weight takes one of two paths (kernels/int4.cu):
//   - at most int4GEMVTokens tokens: int4_gemv, a fused W4A16 kernel that
//     reads each packed word once per chunk of up to 8 tokens and
//     multiplies in f32 (decode, and a routed expert's handful of tokens:
//     bound by reading the weight, of which it reads a quarter of bf16's);
//   - more tokens: int4_dequant into a scratch of the activation dtype,
//     freed right after a cuBLAS GEMM reads it (the pool hands the same
//     block to the next weight).
// Both compute q·scale exactly in f32; the scratch path rounds it once to
// the activation dtype (as the same checkpoint dequantized to bf16 on load
// would be). Measured on one H200 (BenchmarkInt4Linear, weight [2048, 7168],
// bf16): fused 9.9 µs at 1 token and 12.6 µs at 4 against cuBLAS on the
// bf16 weight's 25.4 and 22.1 µs; from 8 tokens on the scratch path takes
// 28-45 µs against bf16's 21-29 µs (a tensor-core W4A16 kernel would close
// that gap: not written yet). The MoE block's routed experts (backend.MoE)
// run on the grouped kernel (rank_moe_grouped.go, kernels/moe_gemm.cu:
// packed tiles widened in shared memory); with HSDB_MOE_GEMM=cublas,
// int4ExpertGEMMs launches the fused kernel once per lightly routed expert
// and projection and dequantizes the others to a scratch
// (BenchmarkKimiMoEInt4 and BenchmarkMoEGrouped measure both against bf16
// experts).

// int4GEMVTokens is the largest token count Linear sends to the fused
// W4A16 kernel, and int4ChunkBytes the size of the scratch the other path
// dequantizes into (0: the whole weight at once; otherwise a block of rows
// at a time, each GEMMed while it is still in L2). BenchmarkKimiMoEInt4 and
// BenchmarkInt4Linear measure the choices against bf16 weights.
var (
	int4GEMVTokens       = 4
	int4ChunkBytes int64 = 0
)

// int4Layout is how one packed weight lies in its storage: the packed
// words [out, words] uint32 first, then the scales [out, groups] (bf16, or
// f32 when the checkpoint's scales are not bf16) at scaleOff.
type int4Layout struct {
	out, in, words, groups, group int
	scaleOff                      int64
	scaleF32                      bool
}

// uploadInt4 copies q's packed words and scales into one persistent
// allocation (class weights: data plus scales, nothing dequantized) and
// returns a tensor of logical shape [out, in] and dtype I32 (the packed
// storage) that Linear recognizes.
func (d *Device) uploadInt4(q *tensor.Quantized) backend.Tensor {
	const op = "upload int4"
	if err := q.Check(); err != nil {
		d.badArg(op, "%v", err)
	}
	out, in := q.Shape[0], q.Shape[1]
	L := &int4Layout{out: out, in: in, words: q.Data.Shape[1], groups: q.Scale.Shape[1], group: q.Block[1]}
	scale := q.Scale
	if scale.DType != tensor.BF16 {
		scale, L.scaleF32 = scale.Convert(tensor.F32), true // f16/f32 scales widen exactly
	}
	L.scaleOff = (int64(len(q.Data.Data)) + 255) &^ 255
	total := L.scaleOff + int64(len(scale.Data))
	x, err := d.newTensor(tensor.I32, []int{int((total + 3) / 4)}, driver.Weights, false)
	if err == nil {
		buf := make([]byte, x.st.bytes)
		copy(buf, q.Data.Data)
		copy(buf[L.scaleOff:], scale.Data)
		if err = d.mem.copyIn(x.ptr(), buf); err != nil {
			d.Free(x)
		}
	}
	if err != nil {
		panic(d.fail(op, fmt.Errorf("[%d, %d] in %d-column groups: %w", out, in, L.group, err)))
	}
	x.shape = []int{out, in}
	x.st.int4 = L
	return x
}

// int4Of returns the packed layout of weight w, or nil for a dense tensor:
// the dispatch point for ops that take weights (Linear here; a grouped
// expert GEMM may call int4Dense for the experts a step touches).
func int4Of(w *Tensor) *int4Layout { return w.st.int4 }

// linearInt4 computes y = x·Wᵀ for packed W (see the file comment). x is
// [tokens, in] in the activation dtype; there is no bias (no DeepSeek or
// Kimi linear has one; a biased linear is stored dense).
func (d *Device) linearInt4(op string, xt, wt *Tensor, b backend.Tensor) backend.Tensor {
	L := int4Of(wt)
	d.float(op, xt)
	if !isNil(b) {
		d.badArg(op, "int4 weight [%d, %d] with a bias is not supported", L.out, L.in)
	}
	T, in := xt.rows(), xt.cols()
	if in != L.in {
		d.badArg(op, "x %v and int4 weight [%d, %d]: inner dims %d != %d", xt.shape, L.out, L.in, in, L.in)
	}
	dt := xt.dt
	var y *Tensor
	var scratch *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(dt, T, L.out); err != nil || T == 0 || L.out == 0 {
			return err
		}
		sp := wt.ptr().Add(L.scaleOff)
		if T <= int4GEMVTokens && L.in%32 == 0 && L.group%32 == 0 && xt.ptr()%16 == 0 {
			return d.g.Int4GEMV(y.ptr(), xt.ptr(), wt.ptr(), sp, L, T, L.out, dt)
		}
		es := int64(dt.Size())
		rows := L.out
		if int4ChunkBytes > 0 {
			rows = int(min(int64(L.out), max(int4ChunkBytes/(int64(L.in)*es), 1)))
		}
		if scratch, err = d.output(dt, rows, L.in); err != nil {
			return err
		}
		sb := int64(2)
		if L.scaleF32 {
			sb = 4
		}
		for r0 := 0; r0 < L.out; r0 += rows {
			n := min(rows, L.out-r0)
			part := &int4Layout{out: n, in: L.in, words: L.words, groups: L.groups, group: L.group, scaleF32: L.scaleF32}
			if err := d.g.Int4Dequant(scratch.ptr(), wt.ptr().Add(int64(r0)*int64(L.words)*4), sp.Add(int64(r0)*int64(L.groups)*sb), part, dt); err != nil {
				return err
			}
			g := driver.GEMM{M: T, N: n, K: L.in, TransB: true, LDC: L.out, Alpha: 1, In: dt, Out: dt}
			if err := d.g.MatMul(g, y.ptr().Add(int64(r0)*es), xt.ptr(), scratch.ptr()); err != nil {
				return err
			}
		}
		return nil
	})
	if scratch != nil {
		d.Free(scratch) // queued work that reads it completes first
	}
	return y
}

// int4Dense returns packed weight wt dequantized into a scoped scratch
// tensor [out, in] of dtype dt (GPU thread; the caller frees it once the
// ops reading it are queued).
func (d *Device) int4Dense(wt *Tensor, dt tensor.DType) (*Tensor, error) {
	L := int4Of(wt)
	s, err := d.output(dt, L.out, L.in)
	if err != nil {
		return nil, err
	}
	if err := d.g.Int4Dequant(s.ptr(), wt.ptr(), wt.ptr().Add(L.scaleOff), L, dt); err != nil {
		d.Free(s)
		return nil, err
	}
	return s, nil
}

// Int4Dequant writes the packed weight (words at packed, scales at scale,
// laid out as L says) dequantized to out [L.out, L.in] of dtype to.
func (d *GPU) Int4Dequant(out, packed, scale driver.Ptr, L *int4Layout, to tensor.DType) error {
	sfx, err := suffix("int4 dequant", to)
	if err != nil {
		return err
	}
	n := int64(L.out) * int64(L.words)
	return d.Do(func() error {
		return d.launch("int4", "int4_dequant_"+sfx, d.flatGrid(n), dim3{x: 256}, 0,
			out, packed, scale, b2i(L.scaleF32), int64(L.out), int64(L.in), int64(L.words), int64(L.groups), int32(L.group))
	})
}

// Int4GEMV computes y [T, L.out] (row stride ldy ≥ L.out elements) = x
// [T, L.in] · Wᵀ with the fused W4A16
// kernel (L.in and L.group multiples of 32, x 16-byte aligned), in dtype
// dt with f32 sums; tokens go in chunks of 1, 2, 4 or 8 per block row.
func (d *GPU) Int4GEMV(y, x, packed, scale driver.Ptr, L *int4Layout, T, ldy int, dt tensor.DType) error {
	sfx, err := suffix("int4 gemv", dt)
	if err != nil {
		return err
	}
	if L.in%32 != 0 || L.group%32 != 0 || T > 1<<30 || ldy < L.out || ldy > 1<<30 {
		return fmt.Errorf("%w: int4 gemv of [%d, %d] (group %d) for %d tokens, output stride %d", driver.ErrBadArgument, L.out, L.in, L.group, T, ldy)
	}
	const warps = 4 // kernels/int4.cu: INT4_WARPS, splitting the columns
	tt := 8
	for _, c := range []int{1, 2, 4} {
		if T <= c {
			tt = c
			break
		}
	}
	rowsPerBlock := 1 // kernels/int4.cu: INT4_GEMV
	if tt >= 4 {
		rowsPerBlock = 4
	}
	grid := dim3{x: uint32((L.out + rowsPerBlock - 1) / rowsPerBlock), y: uint32((T + tt - 1) / tt)}
	return d.Do(func() error {
		return d.launch("int4", fmt.Sprintf("int4_gemv%d_%s", tt, sfx), grid, dim3{x: 32 * warps}, 0,
			y, x, packed, scale, b2i(L.scaleF32), int32(T), int32(L.in), int32(L.out), int32(ldy), int32(L.groups), int32(L.group))
	})
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// int4ToHost returns rows [r0,r1) × columns [c0,c1) of packed weight x
// dequantized to f32 (what `print` of a weight shows): the whole weight is
// dequantized into a device scratch and copied; only the slice is kept.
func (d *Device) int4ToHost(x *Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	const op = "to_host int4"
	L := int4Of(x)
	full := tensor.New(tensor.F32, L.out, L.in)
	var s *Tensor
	d.do(op, func() error {
		var err error
		if s, err = d.int4Dense(x, tensor.F32); err != nil {
			return err
		}
		return d.g.CopyToHost(full.Data, s.ptr())
	})
	if s != nil {
		d.Free(s)
	}
	out := tensor.New(tensor.F32, r1-r0, c1-c0)
	ov, fv := out.F32(), full.F32()
	for r := r0; r < r1; r++ {
		copy(ov[(r-r0)*(c1-c0):(r-r0+1)*(c1-c0)], fv[r*L.in+c0:r*L.in+c1])
	}
	return out
}

// int4Experts are a MoE layer's routed experts kept packed in int4 (the
// backend.MoE path, nn.MoE): per expert gate and up (dequantized together
// into one [2·inter, hidden] w13, gate rows first) and down.
type int4Experts struct {
	gateUp []*Tensor // gate_0, up_0, gate_1, up_1, ...
	down   []*Tensor
}

// int4ChunkExpertBytes bounds the scratch RoutedExperts dequantizes a
// layer's touched int4 experts into before their grouped GEMMs.
var int4ChunkExpertBytes int64 = 2 << 30

// int4ExpertSet checks that gate, up and down are packed int4 weights of
// shapes [I, H], [I, H], [H, I] and returns them as an int4Experts, or nil
// when gate[0] is not int4.
func (d *Device) int4ExpertSet(op string, first int, gate, up, down []*Tensor) *int4Experts {
	if int4Of(gate[0]) == nil {
		return nil
	}
	e := &int4Experts{}
	for i := range gate {
		for _, w := range []*Tensor{gate[i], up[i], down[i]} {
			if int4Of(w) == nil {
				d.badArg(op, "expert %d: gate_proj is int4 but a projection is %v %s", first+i, w.shape, w.dt)
			}
		}
		e.gateUp = append(e.gateUp, gate[i], up[i])
		e.down = append(e.down, down[i])
	}
	return e
}

// int4ExpertGEMMs is ExpertGEMMs over packed int4 experts (GPU thread). An
// expert this step routes at most int4GEMVTokens rows to runs the fused
// W4A16 kernel on its packed words (each of its wPer weights into its
// column block of c); the other touched experts (rows[e] > 0; untouched
// ones cost nothing) are dequantized, as many at a time as fit
// int4ChunkExpertBytes, into a scratch of dtype dt (per expert its wPer
// weights stacked into [N, K]) right before their grouped GEMM. a's and
// c's rows are the experts' rows in id order; addr holds 24·len(rows)
// bytes.
func (d *Device) int4ExpertGEMMs(c, a driver.Ptr, ws []*Tensor, wPer int, rows []int32, N, K int, dt tensor.DType, addr driver.Ptr) error {
	es := int64(dt.Size())
	per := int64(N) * int64(K) * es
	start := make([]int64, len(rows)) // each expert's first row in a and c
	var touched []int
	off := int64(0)
	for e, r := range rows {
		start[e] = off
		off += int64(r)
		switch {
		case r == 0:
		case int(r) <= int4GEMVTokens && K%32 == 0 && a%16 == 0 && es*int64(K)%16 == 0 && int4Of(ws[e*wPer]).group%32 == 0:
			// A handful of rows: the fused kernel straight from the
			// packed words, each weight into its column block of c.
			col := int64(0)
			for _, w := range ws[e*wPer : (e+1)*wPer] {
				L := int4Of(w)
				if err := d.g.Int4GEMV(c.Add((start[e]*int64(N)+col)*es), a.Add(start[e]*int64(K)*es), w.ptr(), w.ptr().Add(L.scaleOff), L, int(r), N, dt); err != nil {
					return err
				}
				col += int64(L.out)
			}
		default:
			touched = append(touched, e)
		}
	}
	if len(touched) == 0 {
		return nil
	}
	// The dequantized experts' rows need not be consecutive any more
	// (GEMV'd experts sit between them): one grouped GEMM per run of
	// consecutive touched experts, at most chunk experts each.
	chunk := int(max(1, min(int64(len(touched)), int4ChunkExpertBytes/per)))
	scratch, err := d.mem.alloc(int64(chunk)*per, driver.Activations)
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{scratch, driver.Activations}})
	for c0 := 0; c0 < len(touched); {
		c1 := c0 + 1
		for c1 < len(touched) && c1-c0 < chunk && start[touched[c1]] == start[touched[c1-1]]+int64(rows[touched[c1-1]]) {
			c1++
		}
		group := touched[c0:c1]
		c0 = c1
		wp := make([]driver.Ptr, len(group))
		rr := make([]int32, len(group))
		for i, e := range group {
			wp[i], rr[i] = scratch.Add(int64(i)*per), rows[e]
			part := wp[i]
			for _, w := range ws[e*wPer : (e+1)*wPer] {
				L := int4Of(w)
				if err := d.g.Int4Dequant(part, w.ptr(), w.ptr().Add(L.scaleOff), L, dt); err != nil {
					return err
				}
				part = part.Add(int64(L.out) * int64(L.in) * es)
			}
		}
		s := start[group[0]]
		if err := d.g.ExpertGEMMs(c.Add(s*int64(N)*es), a.Add(s*int64(K)*es), wp, rr, N, K, dt, addr); err != nil {
			return err
		}
	}
	return nil
}
