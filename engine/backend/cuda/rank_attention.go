//go:build cuda

package cuda

import (
	"hsdb/engine/backend/cuda/driver"
	"os"
	"slices"
	"strconv"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Attention tunables, read once from the environment so a benchmark can
// try other values without a rebuild.
var (
	// attnGEMMMinRun: a batch holding a run of at least this many
	// consecutive tokens of one sequence computes attention as two cuBLAS
	// GEMMs around a masked softmax (HSDB_CUDA_ATTN_GEMM_MIN, default 64);
	// shorter runs use the tiled kernels of attention.cu.
	attnGEMMMinRun = envInt("HSDB_CUDA_ATTN_GEMM_MIN", 64)
	// attnChunk: queries per GEMM chunk (HSDB_CUDA_ATTN_CHUNK, default
	// 1024). A chunk's keys end at its last query's position, so smaller
	// chunks skip more of the causal upper triangle, at the cost of more,
	// smaller GEMMs: measured on an H200 for 4 × 1024-token prefills of a
	// Llama-3-8B shape, 256 gave 32.3k tok/s, 512 33.3k, 1024 33.4k.
	attnChunk = envInt("HSDB_CUDA_ATTN_CHUNK", 1024)
	// attnScratch caps the bytes of one chunk's scores and probabilities.
	attnScratch int64 = 512 << 20
	// flashAttn: bf16/f16 batches with a prefill run use the fused kernel
	// of kernels/flash_attention.cu (FlashAttention-2; bf16 MLA on Hopper
	// kernels/flash_wgmma.cu, GPU.FlashAttention) where its head dims
	// fit; HSDB_CUDA_FLASH=0 turns it off, for comparison with the GEMM
	// path.
	flashAttn = os.Getenv("HSDB_CUDA_FLASH") != "0"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// attnRun is a run of consecutive tokens of one sequence: tokens [t0,
// t0+n), whose keys start at cache row base.
type attnRun struct{ t0, n, base int }

// attnRuns splits a batch into runs of equal Base.
func attnRuns(base []int32) []attnRun {
	var runs []attnRun
	for t := 0; t < len(base); {
		n := 1
		for t+n < len(base) && base[t+n] == base[t] {
			n++
		}
		runs = append(runs, attnRun{t0: t, n: n, base: int(base[t])})
		t += n
	}
	return runs
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// slotLayout views a cache of cacheRows rows as [numSlots, capacity] for
// attention.cu's kernels, which address keys by (slot, position): capacity
// is the gcd of cacheRows and every token's Base, so each Base is a
// whole slot. It reports false when some position would not fit its slot
// (a layout other than model.KVCache's, whose Base is slot·capacity).
func slotLayout(cacheRows int, base, pos []int32) (slots []int32, numSlots, capacity int, ok bool) {
	c := cacheRows
	maxPos := 0
	for t := range base {
		c = gcd(c, int(base[t]))
		maxPos = max(maxPos, int(pos[t]))
	}
	if c <= maxPos {
		return nil, 0, 0, false
	}
	slots = make([]int32, len(base))
	for t := range base {
		slots[t] = base[t] / int32(c)
	}
	return slots, cacheRows / c, c, true
}

// Attention computes causal softmax(q·kᵀ·scale)·v per token and head over
// the cache tensors k [cacheRows, KVHeads*DK] and v [cacheRows, KVHeads*DV]
// for q [tokens, Heads*DK] (backend.AttnArgs). Out: [tokens, Heads*DV] in
// q's dtype. Scores and softmax are f32.
//
// A bf16 or f16 batch with a run of two or more tokens of one sequence (a
// prefill, whole or chunked) and equal head dims of 64 or 128, or
// DeepSeek's MLA (192, 128), runs the fused tensor-core kernel
// (GPU.FlashAttention; HF's SDPA/flash-attn path), unless HSDB_CUDA_FLASH=0. Otherwise a batch with a run of at
// least attnGEMMMinRun tokens (every f32 prefill) runs as HF's eager
// attention does: S = q·kᵀ·scale by cuBLAS in f32, the masked softmax
// (kernels/softmax.cu) rounded to the activation dtype, then P·v by
// cuBLAS, chunked over queries. Other batches (decode, short prompts) use
// attention.cu's tiled kernels, which see the cache as [slots, capacity]
// (slotLayout); if it cannot be seen so, the GEMM path serves them too.
func (d *Device) Attention(q, k, v backend.Tensor, a *backend.AttnArgs) backend.Tensor {
	const op = "attention"
	qt, kt, vt := d.get(op, q), d.get(op, k), d.get(op, v)
	d.float(op, qt)
	T := qt.rows()
	if a.Heads <= 0 || a.KVHeads <= 0 || a.DK <= 0 || a.DV <= 0 || a.Window < 0 || a.Heads%a.KVHeads != 0 ||
		qt.cols() != a.Heads*a.DK || kt.cols() != a.KVHeads*a.DK || vt.cols() != a.KVHeads*a.DV ||
		kt.rows() != vt.rows() || len(a.Base) != T || len(a.Pos) != T || kt.dt != qt.dt || vt.dt != qt.dt {
		d.badArg(op, "q %v %s k %v %s v %v %s for %d/%d heads dk %d dv %d window %d, %d tokens with %d bases and %d positions",
			qt.shape, qt.dt, kt.shape, kt.dt, vt.shape, vt.dt, a.Heads, a.KVHeads, a.DK, a.DV, a.Window, T, len(a.Base), len(a.Pos))
	}
	for t := range T {
		if a.Pos[t] < 0 || a.Base[t] < 0 || int(a.Base[t])+int(a.Pos[t]) >= kt.rows() {
			d.badArg(op, "token %d at cache row %d+%d outside a cache of %d rows", t, a.Base[t], a.Pos[t], kt.rows())
		}
	}
	runs := attnRuns(a.Base)
	longest := 0
	for _, r := range runs {
		longest = max(longest, r.n)
	}
	var slots []int32
	var numSlots, capacity int
	flash := useFlash(qt.dt, a, longest)
	useGEMM := !flash && longest >= attnGEMMMinRun
	if !flash && !useGEMM {
		var ok bool
		slots, numSlots, capacity, ok = slotLayout(kt.rows(), a.Base, a.Pos)
		useGEMM = !ok
	}
	var y *Tensor
	d.do(op, func() error {
		var err error
		if y, err = d.output(qt.dt, T, a.Heads*a.DV); err != nil || T == 0 {
			return err
		}
		if flash {
			return d.attentionFlash(y, qt, kt, vt, a)
		}
		if useGEMM {
			return d.attentionGEMM(y, qt, kt, vt, a, runs)
		}
		b, err := d.tokenBatch(slots, a.Pos, numSlots, capacity)
		if err != nil {
			return err
		}
		return d.g.Attention(y.ptr(), qt.ptr(), kt.ptr(), vt.ptr(), b,
			AttnParams{Heads: a.Heads, KVHeads: a.KVHeads, HeadDimK: a.DK, HeadDimV: a.DV, Window: a.Window, Scale: a.Scale}, qt.dt)
	})
	return y
}

// useFlash reports whether Attention runs the fused kernel for a batch of
// dtype dt whose longest run of one sequence has longest tokens: flashAttn
// is on, the kernel handles dt and the head dims, and the batch is not
// decode only (a lone token per sequence keeps the decode kernel).
func useFlash(dt tensor.DType, a *backend.AttnArgs, longest int) bool {
	return flashAttn && longest > 1 && flashSupported(dt, a.DK, a.DV)
}

// attentionFlash is Attention with GPU.FlashAttention (GPU thread). The
// tile array is built on the host and uploaded through the per-step
// upload cache, so every layer of a step reuses one copy.
func (d *Device) attentionFlash(y, qt, kt, vt *Tensor, a *backend.AttnArgs) error {
	rows := d.g.FlashTileRows(qt.dt, a.DK, a.DV)
	tiles := FlashTiles(a.Base, a.Pos, a.Window, rows)
	tp, err := d.upload(flashTileBytes(tiles))
	if err != nil {
		return err
	}
	return d.g.FlashAttention(y.ptr(), qt.ptr(), kt.ptr(), vt.ptr(), tp, len(tiles),
		AttnParams{Heads: a.Heads, KVHeads: a.KVHeads, HeadDimK: a.DK, HeadDimV: a.DV, Window: a.Window, Scale: a.Scale, TileRows: rows}, qt.dt)
}

// tokenBatch returns a TokenBatch for slots and positions, reusing the
// previous one when they are the same (every layer of a step attends with
// the same batch). GPU thread.
func (d *Device) tokenBatch(slots, pos []int32, numSlots, capacity int) (*TokenBatch, error) {
	c := &d.uploads
	if b := c.batch; b != nil && b.numSlots == numSlots && b.capacity == capacity &&
		slices.Equal(c.batchSlots, slots) && slices.Equal(c.batchPos, pos) {
		return b, nil
	}
	b, err := d.g.NewTokenBatch(slots, pos, numSlots, capacity)
	if err != nil {
		return nil, err
	}
	if c.batch != nil {
		if err := c.batch.Free(); err != nil {
			b.Free()
			return nil, err
		}
	}
	c.batch, c.batchSlots, c.batchPos = b, slices.Clone(slots), slices.Clone(pos)
	return b, nil
}

// attentionGEMM is Attention as two GEMMs around a masked softmax, run by
// run and chunk by chunk of queries (GPU thread). For query head h = g·G +
// i (G = Heads/KVHeads, kv head g) the products of one i are one strided
// batched GEMM over g.
func (d *Device) attentionGEMM(y, qt, kt, vt *Tensor, a *backend.AttnArgs, runs []attnRun) error {
	dt := qt.dt
	es := int64(dt.Size())
	G := a.Heads / a.KVHeads
	qld, old := a.Heads*a.DK, a.Heads*a.DV
	kld, vld := a.KVHeads*a.DK, a.KVHeads*a.DV
	posp, err := d.uploadI32(a.Pos)
	if err != nil {
		return err
	}
	lo := func(t int) int {
		if a.Window > 0 {
			return max(0, int(a.Pos[t])-a.Window+1)
		}
		return 0
	}
	for _, r := range runs {
		for c0 := 0; c0 < r.n; {
			qn := min(r.n-c0, attnChunk)
			// Keys of the chunk: from its smallest lower bound to its
			// largest position.
			klo, khi := int(^uint(0)>>1), 0
			for t := r.t0 + c0; t < r.t0+c0+qn; t++ {
				klo = min(klo, lo(t))
				khi = max(khi, int(a.Pos[t]))
			}
			kn := khi - klo + 1
			// Halve the chunk until its scores and probabilities fit the
			// scratch cap.
			for qn > 1 && int64(a.Heads)*int64(qn)*int64(kn)*(4+es) > attnScratch {
				qn /= 2
				klo, khi = int(^uint(0)>>1), 0
				for t := r.t0 + c0; t < r.t0+c0+qn; t++ {
					klo = min(klo, lo(t))
					khi = max(khi, int(a.Pos[t]))
				}
				kn = khi - klo + 1
			}
			if err := d.attnChunk(y, qt, kt, vt, a, r, c0, qn, klo, kn, posp, G, qld, old, kld, vld, es); err != nil {
				return err
			}
			c0 += qn
		}
	}
	return nil
}

// attnChunk computes queries [c0, c0+qn) of run r against keys at
// positions [klo, klo+kn) of its sequence (GPU thread).
func (d *Device) attnChunk(y, qt, kt, vt *Tensor, a *backend.AttnArgs, r attnRun, c0, qn, klo, kn int, posp driver.Ptr,
	G, qld, old, kld, vld int, es int64) error {
	dt := qt.dt
	sBytes := int64(a.Heads) * int64(qn) * int64(kn) * 4
	pBytes := int64(a.Heads) * int64(qn) * int64(kn) * es
	s, err := d.mem.alloc(sBytes, driver.Activations)
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{s, driver.Activations}})
	p, err := d.mem.alloc(pBytes, driver.Activations)
	if err != nil {
		return err
	}
	defer d.mem.free([]block{{p, driver.Activations}})
	t0 := int64(r.t0 + c0)
	k0 := int64(r.base + klo) // first key's cache row
	plane := int64(qn) * int64(kn)
	for i := range G {
		g := driver.GEMM{M: qn, N: kn, K: a.DK, TransB: true, LDA: qld, LDB: kld, LDC: kn,
			Batch: a.KVHeads, StrideA: int64(G * a.DK), StrideB: int64(a.DK), StrideC: int64(G) * plane,
			Alpha: a.Scale, In: dt, Out: tensor.F32}
		if err := d.g.MatMul(g, s.Add(int64(i)*plane*4), qt.ptr().Add((t0*int64(qld)+int64(i*a.DK))*es), kt.ptr().Add(k0*int64(kld)*es)); err != nil {
			return err
		}
	}
	if err := d.g.AttnSoftmax(p, s, posp.Add(4*t0), a.Heads, qn, kn, klo, a.Window, dt); err != nil {
		return err
	}
	for i := range G {
		g := driver.GEMM{M: qn, N: a.DV, K: kn, LDA: kn, LDB: vld, LDC: old,
			Batch: a.KVHeads, StrideA: int64(G) * plane, StrideB: int64(a.DV), StrideC: int64(G * a.DV),
			Alpha: 1, In: dt, Out: dt}
		if err := d.g.MatMul(g, y.ptr().Add((t0*int64(old)+int64(i*a.DV))*es), p.Add(int64(i)*plane*es), vt.ptr().Add(k0*int64(vld)*es)); err != nil {
			return err
		}
	}
	return nil
}
