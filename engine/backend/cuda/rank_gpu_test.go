//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// These tests run every backend op on the GPU and on the CPU backend (the
// independent reference: pure Go, float32) from the same inputs, and skip
// where there is no GPU. In bf16 the CPU gets the bf16-rounded inputs in
// f32 and the comparison allows one bf16 rounding of the output.

// virtualRanks returns n ranks sharing GPU 0 with in-process collectives,
// computing in act, or skips the test without a GPU.
func virtualRanksOn(t testing.TB, n int, act tensor.DType) ([]*Device, []*Comm) {
	t.Helper()
	g := gpu(t)
	devs := make([]*Device, n)
	comms := make([]*Comm, n)
	group := backend.NewGroup(n)
	for r := range n {
		devs[r] = newDevice(g, gpuMemory{g}, fmt.Sprintf("cuda:0/rank%d", r), r, act)
	}
	for r := range n {
		comms[r] = &Comm{dev: devs[r], rank: r, world: n, group: group, devs: devs}
	}
	t.Cleanup(func() {
		for _, d := range devs {
			d.Close()
		}
	})
	return devs, comms
}

// pair holds one CUDA rank and one CPU device fed the same values.
type pair struct {
	t   *testing.T
	g   *Device
	c   *cpu.Device
	dt  tensor.DType // the CUDA activation dtype
	rng *rand.Rand
}

func newPair(t *testing.T, dt tensor.DType) *pair {
	devs, _ := virtualRanksOn(t, 1, dt)
	return &pair{t: t, g: devs[0], c: cpu.New(-1), dt: dt, rng: rand.New(rand.NewPCG(7, uint64(dt)))}
}

// act returns an activation [rows, cols] of N(0, scale²) values, rounded
// to the activation dtype, on both devices (f32 on the CPU).
func (p *pair) act(rows, cols int, scale float64) (backend.Tensor, backend.Tensor) {
	v := roundTo(randn(p.rng, rows*cols, scale), p.dt)
	h := tensor.FromF32(v, rows, cols)
	return p.g.Upload(h.Convert(p.dt)), p.c.Upload(tensor.FromF32(slices.Clone(v), rows, cols))
}

// weight returns a weight of shape stored in wdt on both devices (the CPU
// widens it on use, the CUDA rank converts it if wdt is not its dtype).
func (p *pair) weight(wdt tensor.DType, scale float64, shape ...int) (backend.Tensor, backend.Tensor) {
	v := randn(p.rng, tensor.Numel(shape), scale)
	h := tensor.FromF32(v, shape...).Convert(wdt)
	return p.g.Upload(h), p.c.Upload(h)
}

// tols returns the comparison tolerance for outputs of magnitude about
// scale: float32 summation order, or one bf16/f16 rounding.
func (p *pair) tols(scale float64) (atol, rtol float64) {
	a, r := tol(p.dt)
	if p.dt == tensor.F32 {
		a, r = 1e-5, 1e-4
	}
	return a * scale, r
}

// check compares a CUDA result with the CPU's, shapes and values.
func (p *pair) check(name string, got, want backend.Tensor, scale float64) {
	p.t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		p.t.Errorf("%s: shape %v, cpu %v", name, got.Shape(), want.Shape())
		return
	}
	gs := got.Shape()
	rows, cols := 1, 1
	if len(gs) > 0 {
		rows, cols = gs[0], tensor.Numel(gs[1:])
	}
	g := p.g.ToHost(got, 0, rows, 0, cols)
	w := p.c.ToHost(want, 0, rows, 0, cols)
	a, r := p.tols(scale)
	assertClose(p.t, name, g.F32(), w.F32(), a, r)
}

func forActDTypes(t *testing.T, f func(t *testing.T, p *pair)) {
	for _, dt := range []tensor.DType{tensor.F32, tensor.BF16} {
		t.Run(dt.String(), func(t *testing.T) { f(t, newPair(t, dt)) })
	}
}

func TestRankDenseOpsMatchCPU(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		g, c := p.g, p.c
		g.PushScope()
		defer g.PopScope()
		x, xc := p.act(37, 96, 1)
		r, rc := p.act(37, 96, 1)
		// Linear with and without bias, the weight stored in the
		// activation dtype and in the other one (converted on use).
		other := tensor.BF16
		if p.dt == tensor.BF16 {
			other = tensor.F32
		}
		for _, wdt := range []tensor.DType{p.dt, other} {
			w, wc := p.weight(wdt, 0.1, 80, 96)
			b, bc := p.weight(wdt, 1, 80)
			// A weight in another dtype is rounded to the activations'
			// on the GPU but used exactly on the CPU: one more rounding
			// of every weight and of the bias, so twice the tolerance.
			scale := 1.0
			if wdt != p.dt {
				scale = 2
			}
			p.check("linear/"+wdt.String(), g.Linear(x, w, nil), c.Linear(xc, wc, nil), scale)
			p.check("linear+bias/"+wdt.String(), g.Linear(x, w, b), c.Linear(xc, wc, bc), scale)
		}
		nw, nwc := p.weight(p.dt, 1, 96)
		p.check("rmsnorm", g.RMSNorm(x, nw, 1e-5), c.RMSNorm(xc, nwc, 1e-5), 3)
		y, sum := g.AddRMSNorm(x, r, nw, 1e-6)
		yc, sumc := c.AddRMSNorm(xc, rc, nwc, 1e-6)
		p.check("add_rmsnorm/sum", sum, sumc, 2)
		p.check("add_rmsnorm/y", y, yc, 3) // bf16 normalises the rounded sum, as vLLM: within one rounding
		p.check("add", g.Add(x, r), c.Add(xc, rc), 2)
		p.check("scale", g.Scale(x, -0.37), c.Scale(xc, -0.37), 1)
		p.check("silu_mul", g.SiluMul(x, r), c.SiluMul(xc, rc), 2)
		p.check("slice_cols", g.SliceCols(x, 13, 50), c.SliceCols(xc, 13, 50), 1)
		p.check("concat_cols", g.ConcatCols(x, g.SliceCols(r, 0, 7), x), c.ConcatCols(xc, c.SliceCols(rc, 0, 7), xc), 1)
		idx := []int32{5, 0, 36, 5, 17}
		p.check("gather_rows", g.GatherRows(x, idx), c.GatherRows(xc, idx), 1)
		// Embedding: a vocab shard [16, 80) with ids inside and outside.
		for _, wdt := range []tensor.DType{p.dt, other} {
			tb, tbc := p.weight(wdt, 1, 64, 24)
			ids := []int32{16, 79, 3, 80, 40, 16}
			p.check("embedding/"+wdt.String(), g.Embedding(tb, ids, 16), c.Embedding(tbc, ids, 16), 1)
		}
		// ToHost of a column slice and Moments of a slice.
		if got, want := g.ToHost(x, 3, 20, 7, 61), c.ToHost(xc, 3, 20, 7, 61); !slices.Equal(got.F32(), want.F32()) {
			t.Errorf("to_host slice differs")
		}
		m, mc := g.Moments(x, 2, 30, 5, 90), c.Moments(xc, 2, 30, 5, 90)
		if m.Count != mc.Count || m.Zeros != mc.Zeros || m.Min != mc.Min || m.Max != mc.Max || !(math.Abs(m.Sum-mc.Sum) <= 1e-9*mc.SumSq) ||
			!(math.Abs(m.SumSq-mc.SumSq) <= 1e-12*mc.SumSq) {
			t.Errorf("moments %+v, cpu %+v", m, mc)
		}
	})
}

func TestRankRowOpsMatchCPU(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		g, c := p.g, p.c
		// ScatterAddRows with repeated destination rows and weights, into a
		// persistent and a scoped destination.
		dst, dstc := p.act(10, 40, 1)
		src, srcc := p.act(6, 40, 1)
		idx := []int32{3, 9, 3, 0, 3, 9}
		w := []float32{0.5, -1, 2, 1, 0.25, 3}
		g.ScatterAddRows(dst, src, idx, w)
		c.ScatterAddRows(dstc, srcc, idx, w)
		p.check("scatter_add_rows", dst, dstc, 4)
		g.ScatterAddRows(dst, src, idx, nil)
		c.ScatterAddRows(dstc, srcc, idx, nil)
		p.check("scatter_add_rows/ones", dst, dstc, 6)
		// KV-cache writes and the copy of a grown cache.
		cache, cachec := g.Zeros(p.dt, 32, 40), c.Zeros(tensor.F32, 32, 40)
		rows := []int32{31, 0, 17, 4, 5, 6}
		g.WriteRows(cache, src, rows)
		c.WriteRows(cachec, srcc, rows)
		p.check("write_rows", cache, cachec, 1)
		grown, grownc := g.Zeros(p.dt, 64, 40), c.Zeros(tensor.F32, 64, 40)
		g.CopyRows(grown, 32, cache, 16, 16)
		c.CopyRows(grownc, 32, cachec, 16, 16)
		p.check("copy_rows", grown, grownc, 1)
	})
}

func TestRankRoPEMatchesCPU(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		x, xc := p.act(9, 4*16, 1)
		pos := []int32{0, 1, 2, 3, 700, 5, 0, 1, 4095}
		inv := make([]float32, 8)
		for i := range inv {
			inv[i] = float32(math.Pow(10000, -float64(2*i)/16))
		}
		for _, il := range []bool{false, true} {
			a := &backend.RoPEArgs{Heads: 4, HeadDim: 16, Pos: pos, InvFreq: inv, MScale: 1.25, Interleaved: il}
			p.check(fmt.Sprintf("rope/interleaved=%v", il), p.g.RoPE(x, a), p.c.RoPE(xc, a), 1.25)
		}
	})
}

// attnBatch is a step of three sequences against a cache of 4 slots of 64
// positions (model.KVCache's layout): a 21-token prompt in slot 2, 5 tokens
// continuing slot 0 from position 30, one decode token in slot 3 at
// position 40. History rows are filled first.
func attnBatch() (base, pos []int32) {
	add := func(slot, from, n int) {
		for i := range n {
			base = append(base, int32(slot*64))
			pos = append(pos, int32(from+i))
		}
	}
	add(2, 0, 21)
	add(0, 30, 5)
	add(3, 40, 1)
	return base, pos
}

func TestRankAttentionMatchesCPU(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		const heads, kvHeads, dk, dv = 8, 2, 16, 8
		base, pos := attnBatch()
		k, kc := p.act(4*64, kvHeads*dk, 1)
		v, vc := p.act(4*64, kvHeads*dv, 1)
		q, qc := p.act(len(base), heads*dk, 1)
		oldMin, oldChunk := attnGEMMMinRun, attnChunk
		defer func() { attnGEMMMinRun, attnChunk = oldMin, oldChunk }()
		for _, gemmMin := range []int{1 << 30, 1} { // the tiled kernels, then the GEMM path
			for _, window := range []int{0, 7} {
				attnGEMMMinRun = gemmMin
				a := &backend.AttnArgs{Heads: heads, KVHeads: kvHeads, DK: dk, DV: dv, Scale: 0.25, Window: window, Base: base, Pos: pos}
				name := fmt.Sprintf("attention/gemm=%v/window=%d", gemmMin == 1, window)
				p.check(name, p.g.Attention(q, k, v, a), p.c.Attention(qc, kc, vc, a), 1)
			}
		}
		// Sequences packed at arbitrary rows (no slot layout) take the GEMM
		// path whatever the threshold.
		packed := &backend.AttnArgs{Heads: heads, KVHeads: kvHeads, DK: dk, DV: dv, Scale: 0.25,
			Base: []int32{0, 0, 0, 7, 7}, Pos: []int32{0, 1, 2, 0, 9}}
		q2, q2c := p.act(5, heads*dk, 1)
		p.check("attention/packed", p.g.Attention(q2, k, v, packed), p.c.Attention(q2c, kc, vc, packed), 1)
		// A long prompt over several GEMM chunks, with a small chunk.
		attnChunk = 16
		var lb, lp []int32
		for i := range 50 {
			lb, lp = append(lb, 64), append(lp, int32(i))
		}
		q3, q3c := p.act(50, heads*dk, 1)
		long := &backend.AttnArgs{Heads: heads, KVHeads: kvHeads, DK: dk, DV: dv, Scale: 0.25, Window: 20, Base: lb, Pos: lp}
		attnGEMMMinRun = 1
		p.check("attention/chunked", p.g.Attention(q3, k, v, long), p.c.Attention(q3c, kc, vc, long), 1)
	})
}

// TestRankScopesOnGPU: a layer-shaped sequence of ops inside scopes gives
// back every byte it allocated, to the rank and to the GPU's pool.
func TestRankScopesOnGPU(t *testing.T) {
	devs, _ := virtualRanksOn(t, 1, tensor.BF16)
	d := devs[0]
	w := d.Upload(tensor.New(tensor.BF16, 64, 64))
	d.PushScope()
	x := d.Alloc(16, 64)
	held, _ := d.g.MemoryStats()
	for range 3 {
		d.PushScope()
		y := d.Linear(x, w, nil)
		z := d.RMSNorm(d.Add(y, x), d.Upload(tensor.New(tensor.BF16, 64)), 1e-5)
		d.PopScope(z)
		d.Free(x)
		x = z
	}
	d.Free(x)
	d.Free(x)
	d.PopScope()
	after, _ := d.g.MemoryStats()
	if got := d.MemoryByClass(); got[driver.Activations] != 0 {
		t.Errorf("rank holds %v bytes by class after the scopes", got)
	}
	if after.InUse[driver.Activations] >= held.InUse[driver.Activations] {
		t.Errorf("pool activations %d after, %d while a scope held x", after.InUse[driver.Activations], held.InUse[driver.Activations])
	}
}

// TestRankWeightCastOnce: a f32 weight used by a bf16 rank is converted
// once and kept (accounted as weights), and freed with the weight.
func TestRankWeightCastOnce(t *testing.T) {
	devs, _ := virtualRanksOn(t, 1, tensor.BF16)
	d := devs[0]
	w := d.Upload(tensor.New(tensor.F32, 32, 16)) // 2048 B
	x := d.Alloc(4, 16)
	d.Linear(x, w, nil)
	d.Linear(x, w, nil)
	if got := d.MemoryByClass()[driver.Weights]; got != 2048+1024 {
		t.Errorf("weights %d bytes after two uses, want 3072 (the f32 weight and one bf16 copy)", got)
	}
	d.Free(w)
	if got := d.MemoryByClass()[driver.Weights]; got != 0 {
		t.Errorf("weights %d bytes after Free", got)
	}
	// An activation of the wrong dtype is refused, not converted.
	x32 := d.Reshape(d.Upload(tensor.New(tensor.F32, 4, 16)), 4, 16)
	d.PushScope()
	a := d.Scale(x32, 1) // a scoped f32 activation
	wantDeviceError(t, "activation dtype", "linear", driver.ErrBadArgument, func() { d.Linear(d.Alloc(4, 16), a, nil) })
	d.PopScope()
}

// TestInProcessCollectives: three virtual ranks on one GPU; the
// all-reduce equals the rank-ordered float32 sum computed on the host
// exactly, and the all-gather the host concatenation.
func TestInProcessCollectives(t *testing.T) {
	devs, comms := virtualRanksOn(t, 3, tensor.F32)
	rng := rand.New(rand.NewPCG(3, 4))
	const rows = 5
	gcols := []int{2, 7, 4} // all-gather shards may differ in width
	host, ghost := make([][]float32, 3), make([][]float32, 3)
	xs, ys := make([]backend.Tensor, 3), make([]backend.Tensor, 3)
	for r := range 3 {
		host[r] = randn(rng, rows*7, 1)
		xs[r] = devs[r].Upload(tensor.FromF32(host[r], rows, 7))
		ghost[r] = randn(rng, rows*gcols[r], 1)
		ys[r] = devs[r].Upload(tensor.FromF32(ghost[r], rows, gcols[r]))
	}
	sums := make([]*tensor.Tensor, 3)
	gathered := make([]*tensor.Tensor, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := comms[r].AllReduceSum(xs[r])
			sums[r] = devs[r].ToHost(s, 0, rows, 0, 7)
			a := comms[r].AllGatherCols(ys[r])
			gathered[r] = devs[r].ToHost(a, 0, rows, 0, 13)
		}()
	}
	wg.Wait()
	want := make([]float32, rows*7)
	for i := range want {
		want[i] = (host[0][i] + host[1][i]) + host[2][i]
	}
	wantG := make([]float32, 0, rows*13)
	for i := range rows {
		for r := range 3 {
			wantG = append(wantG, ghost[r][i*gcols[r]:(i+1)*gcols[r]]...)
		}
	}
	for r := range 3 {
		assertClose(t, fmt.Sprintf("all-reduce rank %d", r), sums[r].F32(), want, 0, 0)
		assertClose(t, fmt.Sprintf("all-gather rank %d", r), gathered[r].F32(), wantG, 0, 0)
	}
}

// TestNCCLRanks: with two or more GPUs, NewRanks puts one rank per GPU
// and its collectives are NCCL's; the all-gather of [3, 5] shards is
// reassembled along columns.
func TestNCCLRanks(t *testing.T) {
	gpu(t)
	if n, _ := driver.DeviceCount(); n < 2 {
		t.Skipf("one GPU: NCCL ranks need two")
	}
	if os.Getenv("HSDB_CUDA_VIRTUAL") == "1" {
		t.Skipf("HSDB_CUDA_VIRTUAL=1 puts every rank on GPU 0")
	}
	if _, err := driver.NCCLVersion(); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	devs, comms, group, err := NewRanks(2, tensor.F32)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for r := range devs {
			comms[r].Close()
			devs[r].Close()
		}
	}()
	if group != nil || comms[0].nccl == nil || devs[1].GPU().Ordinal() != 1 {
		t.Fatalf("placement: group %v, nccl %v, rank 1 on %s", group, comms[0].nccl, devs[1].Name())
	}
	host := [][]float32{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {}}
	for i := range 15 {
		host[1] = append(host[1], float32(100+i))
	}
	out := make([][2]*tensor.Tensor, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := devs[r].Upload(tensor.FromF32(host[r], 3, 5))
			out[r][0] = devs[r].ToHost(comms[r].AllReduceSum(x), 0, 3, 0, 5)
			out[r][1] = devs[r].ToHost(comms[r].AllGatherCols(x), 0, 3, 0, 10)
		}()
	}
	wg.Wait()
	for r := range 2 {
		for i := range 15 {
			if got := out[r][0].F32()[i]; got != host[0][i]+host[1][i] {
				t.Fatalf("rank %d all-reduce[%d] = %v", r, i, got)
			}
		}
		for row := range 3 {
			got := out[r][1].F32()[row*10 : (row+1)*10]
			want := append(slices.Clone(host[0][row*5:(row+1)*5]), host[1][row*5:(row+1)*5]...)
			if !slices.Equal(got, want) {
				t.Fatalf("rank %d all-gather row %d = %v, want %v", r, row, got, want)
			}
		}
	}
}

// TestCopyRowsToHost: the asynchronous capture copy delivers the rows'
// bytes in the tensor's dtype.
func TestCopyRowsToHost(t *testing.T) {
	devs, _ := virtualRanksOn(t, 1, tensor.BF16)
	d := devs[0]
	h := tensor.FromF32(randn(rand.New(rand.NewPCG(1, 2)), 6*10, 1), 6, 10).Convert(tensor.BF16)
	x := d.Upload(h)
	pin, err := d.AllocHost(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer pin.Free()
	ev, err := d.CopyRowsToHost(x, 2, 5, pin, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := pin.Bytes()[16:16+60], h.Data[40:100]; !slices.Equal(got, want) {
		t.Errorf("copied bytes differ")
	}
	if _, err := d.CopyRowsToHost(x, 2, 7, pin, 0); err == nil {
		t.Error("rows past the end were accepted")
	}
}

// TestToHostBF16Widening: a bf16 read the size of a DeepSeek-V3 prefill's
// last-token logits ([4, 129280], widened on the host in parallel chunks
// straight from the pinned staging buffer) and a column slice of it come
// back as the f32 whose high half is each bf16 bit pattern and whose low
// half is zero (the definition of bf16), bit for bit: NaN payloads,
// infinities, signed zeros and subnormals included.
func TestToHostBF16Widening(t *testing.T) {
	devs, _ := virtualRanksOn(t, 1, tensor.BF16)
	d := devs[0]
	const rows, cols = 4, 129280
	h := tensor.New(tensor.BF16, rows, cols)
	bits := h.U16()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range bits {
		bits[i] = uint16(rng.Uint32())
	}
	special := []uint16{0x7fc1, 0xffff, 0x7f80, 0xff80, 0x8000, 0x0000, 0x0001, 0x807f}
	for i, b := range special {
		bits[i*65537%len(bits)] = b
	}
	x := d.Upload(h)
	check := func(name string, got *tensor.Tensor, r0, r1, c0, c1 int) {
		t.Helper()
		if got.Rows() != r1-r0 || got.Cols() != c1-c0 {
			t.Fatalf("%s: shape %v, want [%d %d]", name, got.Shape, r1-r0, c1-c0)
		}
		g := got.F32()
		bad := 0
		for r := r0; r < r1; r++ {
			for c := c0; c < c1; c++ {
				want := uint32(bits[r*cols+c]) << 16
				if b := math.Float32bits(g[(r-r0)*(c1-c0)+c-c0]); b != want {
					if bad++; bad <= 3 {
						t.Errorf("%s: [%d, %d] bits %#08x, want %#08x", name, r, c, b, want)
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ", name, bad, (r1-r0)*(c1-c0))
		}
	}
	check("whole", d.ToHost(x, 0, rows, 0, cols), 0, rows, 0, cols)
	check("column slice", d.ToHost(x, 1, 4, 70001, 129279), 1, 4, 70001, 129279)
	check("one row", d.ToHost(x, 3, 4, 0, cols), 3, 4, 0, cols)
}

// TestRankLinearF32: router logits from bf16 activations and a bf16 gate
// weight (one GEMM with float32 output), and from float32 ones, against
// the float64 dot products of the widened values (each product is exact
// in float32; only the float32 summation order may differ: 1e-5 of the
// largest logit).
func TestRankLinearF32(t *testing.T) {
	forActDTypes(t, func(t *testing.T, p *pair) {
		g := p.g
		g.PushScope()
		defer g.PopScope()
		const T, in, out = 37, 300, 24
		x, _ := p.act(T, in, 1)
		wv := roundTo(randn(p.rng, out*in, 0.05), p.dt)
		w := g.Upload(tensor.FromF32(wv, out, in).Convert(p.dt))
		y := g.LinearF32(x, w)
		if y.DType() != tensor.F32 || !slices.Equal(y.Shape(), []int{T, out}) {
			t.Fatalf("LinearF32: %v %s, want [%d %d] f32", y.Shape(), y.DType(), T, out)
		}
		xv := g.ToHost(x, 0, T, 0, in).F32()
		want := make([]float32, T*out)
		for i := range T {
			for j := range out {
				s := 0.0
				for k := range in {
					s += float64(xv[i*in+k]) * float64(wv[j*in+k])
				}
				want[i*out+j] = float32(s)
			}
		}
		peak := 0.0
		for _, v := range want {
			peak = max(peak, math.Abs(float64(v)))
		}
		assertClose(t, "linear_f32", g.ToHost(y, 0, T, 0, out).F32(), want, 1e-5*peak, 0)
	})
}
