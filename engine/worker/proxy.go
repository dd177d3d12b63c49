package worker

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// handle is a tensor of an open visit on a worker: its index in the
// visit's tensors, shape and dtype; valid only during that visit.
type handle struct {
	r     *remoteRank
	gen   uint64
	idx   int
	shape []int
	dt    tensor.DType
}

func (h handle) Shape() []int        { return h.shape }
func (h handle) DType() tensor.DType { return h.dt }

// proxy is the front's backend.Device for a worker's rank: the debugger
// reads statistics (Moments) and value slices (ToHost) of a stop's
// tensors through it, computed on the worker so that only the results
// cross. The compute ops run only in the worker: called here, they panic
// with a *backend.DeviceError. A worker that fails under a query panics
// with a DeviceError wrapping engine.ErrWorker.
type proxy struct{ r *remoteRank }

var _ backend.Device = proxy{}

// Name returns the worker's device name ("cpu:1"), as an in-process rank
// names it; with pipeline stages, its stage too ("cpu:3 (stage 1)").
func (p proxy) Name() string {
	if p.r.f.pp > 1 {
		return fmt.Sprintf("%s (stage %d)", p.r.devName, p.r.stage)
	}
	return p.r.devName
}

// ActDType returns the worker's activation dtype.
func (p proxy) ActDType() tensor.DType { return p.r.act }

// MemoryInUse returns the worker's device bytes in use (the last known
// value when it cannot answer).
func (p proxy) MemoryInUse() int64 {
	p.r.queryMemory()
	return p.r.memory
}

// Moments reduces a region of a visit's tensor on the worker.
func (p proxy) Moments(t backend.Tensor, r0, r1, c0, c1 int) tensor.Moments {
	d := p.query("moments", kindMoments, kindMomentsReply, t, r0, r1, c0, c1)
	m := decMoments(d)
	if d.err != nil {
		p.panic("moments", p.r.fault(d.err))
	}
	return m
}

// ToHost copies a region of a visit's tensor from the worker as f32.
func (p proxy) ToHost(t backend.Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	d := p.query("to-host", kindToHost, kindValues, t, r0, r1, c0, c1)
	h := d.tensor()
	if d.err == nil && (h.DType != tensor.F32 || len(h.Shape) != 2 || h.Shape[0] != r1-r0 || h.Shape[1] != c1-c0) {
		d.fail("values of %s %v for rows %d:%d, columns %d:%d", h.DType, h.Shape, r0, r1, c0, c1)
	}
	if d.err != nil {
		p.panic("to-host", p.r.fault(d.err))
	}
	return h
}

// LensLogits applies the rank's final norm and LM head to rows of a
// visit's tensor (model.LensDevice) and returns its vocabulary shard's
// logits, the shard's first token id and vocab_size. On the last pipeline
// stage (or without stages) the worker that holds the tensor computes
// them; on an earlier stage, which holds no head (vLLM places it on the
// last), the rows' values go to the rank's worker of the last stage.
func (p proxy) LensLogits(t backend.Tensor, rows []int32) (*tensor.Tensor, int, int) {
	h, ok := t.(handle)
	if !ok {
		p.panic("lens", fmt.Errorf("a %T is not a tensor of this worker", t))
	}
	if f := p.r.f; p.r.stage != f.pp-1 {
		return p.lensOnLast(h, rows)
	}
	d := p.call("lens", kindLens, kindLensReply, h, func(e *enc) {
		e.int(h.idx)
		e.u32(uint32(len(rows)))
		for _, r := range rows {
			e.u32(uint32(r))
		}
	})
	return p.lensReply(d, len(rows))
}

// lensReply decodes a lens reply for n rows.
func (p proxy) lensReply(d *dec, n int) (*tensor.Tensor, int, int) {
	lo, vocab := d.int(), d.int()
	var lg *tensor.Tensor
	if d.bool() {
		lg = d.tensor()
		if d.err == nil && (lg.DType != tensor.F32 || len(lg.Shape) != 2 || lg.Shape[0] != n || lo < 0 || lo+lg.Shape[1] > vocab) {
			d.fail("lens logits %s %v from token %d of %d for %d rows", lg.DType, lg.Shape, lo, vocab, n)
		}
	}
	if d.err != nil {
		p.panic("lens", p.r.fault(d.err))
	}
	return lg, lo, vocab
}

// lensOnLast is LensLogits for a tensor of an earlier pipeline stage: the
// rows [len(rows), cols] come to the front as f32 (exact for the
// activation dtypes) and go to the rank's last-stage worker, idle while an
// earlier stage is stopped, which applies its norm and head to them.
func (p proxy) lensOnLast(h handle, rows []int32) (*tensor.Tensor, int, int) {
	f := p.r.f
	_, cols := rowsCols(h.shape)
	x := tensor.New(tensor.F32, len(rows), cols)
	for i, r := range rows {
		v := p.ToHost(h, int(r), int(r)+1, 0, cols)
		copy(x.Data[i*cols*4:(i+1)*cols*4], v.Data)
	}
	last := proxy{f.slot((f.pp-1)*f.world + p.r.rank)}
	if err := last.r.failed(); err != nil {
		p.panic("lens", err)
	}
	last.r.call.Lock()
	defer last.r.call.Unlock()
	var e enc
	e.tensor(x)
	if err := last.r.c.send(kindLensHost, &e); err != nil {
		p.panic("lens", last.r.fault(err))
	}
	k, d, err := last.r.recvQueued()
	if err != nil {
		p.panic("lens", last.r.fault(err))
	}
	if k == kindError {
		p.panic("lens", fmt.Errorf("%s", d.str()))
	}
	if k != kindLensReply {
		p.panic("lens", last.r.fault(fmt.Errorf("protocol: a %s message where a lens reply was expected", kindName(k))))
	}
	return last.lensReply(d, len(rows))
}

var _ model.LensDevice = proxy{}

func (p proxy) query(op string, kind, want byte, t backend.Tensor, r0, r1, c0, c1 int) *dec {
	h, ok := t.(handle)
	if !ok {
		p.panic(op, fmt.Errorf("a %T is not a tensor of this worker", t))
	}
	return p.call(op, kind, want, h, func(e *enc) { region{T: h.idx, R0: r0, R1: r1, C0: c0, C1: c1}.enc(e) })
}

// call sends a request about handle h of the open visit (its payload
// written by body) and returns the reply of kind want.
func (p proxy) call(op string, kind, want byte, h handle, body func(e *enc)) *dec {
	if h.r != p.r {
		p.panic(op, fmt.Errorf("a tensor of rank %d's worker on rank %d's", h.r.rank, p.r.rank))
	}
	r := p.r
	r.mu.Lock()
	live := r.open && r.gen == h.gen
	r.mu.Unlock()
	if !live {
		p.panic(op, fmt.Errorf("the tensor belongs to a visit that has ended"))
	}
	if err := r.failed(); err != nil {
		p.panic(op, err)
	}
	r.call.Lock()
	defer r.call.Unlock()
	var e enc
	body(&e)
	if err := r.c.send(kind, &e); err != nil {
		p.panic(op, r.fault(err))
	}
	k, d, err := r.recvQueued()
	if err != nil {
		p.panic(op, r.fault(err))
	}
	if k == kindError {
		p.panic(op, fmt.Errorf("%s", d.str()))
	}
	if k != want {
		p.panic(op, r.fault(fmt.Errorf("protocol: a %s message where %s was expected", kindName(k), kindName(want))))
	}
	return d
}

func (p proxy) panic(op string, err error) {
	panic(&backend.DeviceError{Device: p.r.devName, Op: op, Err: err})
}

func (p proxy) unavailable(op string) {
	p.panic(op, fmt.Errorf("runs only in rank %d's worker process", p.r.rank))
}

// hostData is what Upload gives the debugger's edits (`set var`,
// `patch`: Upload, CopyRows into a stop's tensor, Free): the rows stay on
// the host until CopyRows sends them to the worker, which writes them into
// its live tensor.
type hostData struct{ t *tensor.Tensor }

func (h hostData) Shape() []int        { return h.t.Shape }
func (h hostData) DType() tensor.DType { return h.t.DType }

// Upload keeps t on the host for a CopyRows into a stop's tensor.
func (p proxy) Upload(t *tensor.Tensor) backend.Tensor { return hostData{t} }

// Free releases an Upload (nothing to do) or, for anything else, is not
// available in the front.
func (p proxy) Free(t backend.Tensor) {
	if _, ok := t.(hostData); !ok {
		p.unavailable("free")
	}
}

// CopyRows writes n rows of an Upload from srcRow into a stop's tensor
// from dstRow, on the worker (a debugger edit). Other copies run only in
// the worker.
func (p proxy) CopyRows(dst backend.Tensor, dstRow int, src backend.Tensor, srcRow, n int) {
	h, ok1 := dst.(handle)
	up, ok2 := src.(hostData)
	if !ok1 || !ok2 {
		p.unavailable("copy-rows")
	}
	if srcRow < 0 || n < 0 || srcRow+n > up.t.Rows() {
		p.panic("copy-rows", fmt.Errorf("rows %d:%d of an upload of %d rows", srcRow, srcRow+n, up.t.Rows()))
	}
	rows := up.t.SliceRows(srcRow, srcRow+n)
	p.call("write-rows", kindWriteRows, kindWritten, h, func(e *enc) {
		e.int(h.idx)
		e.int(dstRow)
		e.tensor(rows)
	})
}
func (p proxy) UploadQuantized(*tensor.Quantized, tensor.DType) backend.Tensor {
	p.unavailable("upload")
	return nil
}
func (p proxy) Zeros(tensor.DType, ...int) backend.Tensor     { p.unavailable("zeros"); return nil }
func (p proxy) Alloc(...int) backend.Tensor                   { p.unavailable("alloc"); return nil }
func (p proxy) PushScope()                                    { p.unavailable("scope") }
func (p proxy) PopScope(...backend.Tensor)                    { p.unavailable("scope") }
func (p proxy) Reshape(backend.Tensor, ...int) backend.Tensor { p.unavailable("reshape"); return nil }
func (p proxy) Embedding(backend.Tensor, []int32, int) backend.Tensor {
	p.unavailable("embedding")
	return nil
}
func (p proxy) Linear(_, _, _ backend.Tensor) backend.Tensor { p.unavailable("linear"); return nil }
func (p proxy) RMSNorm(_, _ backend.Tensor, _ float32) backend.Tensor {
	p.unavailable("rmsnorm")
	return nil
}
func (p proxy) AddRMSNorm(_, _, _ backend.Tensor, _ float32) (backend.Tensor, backend.Tensor) {
	p.unavailable("add-rmsnorm")
	return nil, nil
}
func (p proxy) Add(_, _ backend.Tensor) backend.Tensor       { p.unavailable("add"); return nil }
func (p proxy) Scale(backend.Tensor, float32) backend.Tensor { p.unavailable("scale"); return nil }
func (p proxy) ToF32(backend.Tensor) backend.Tensor          { p.unavailable("to-f32"); return nil }
func (p proxy) LinearF32(_, _ backend.Tensor) backend.Tensor { p.unavailable("linear-f32"); return nil }
func (p proxy) SiluMul(_, _ backend.Tensor) backend.Tensor   { p.unavailable("silu-mul"); return nil }
func (p proxy) RoPE(backend.Tensor, *backend.RoPEArgs) backend.Tensor {
	p.unavailable("rope")
	return nil
}
func (p proxy) RoPEInPlace(backend.Tensor, *backend.RoPEArgs)     { p.unavailable("rope") }
func (p proxy) SliceCols(backend.Tensor, int, int) backend.Tensor { p.unavailable("slice"); return nil }
func (p proxy) ConcatCols(...backend.Tensor) backend.Tensor       { p.unavailable("concat"); return nil }
func (p proxy) GatherRows(backend.Tensor, []int32) backend.Tensor {
	p.unavailable("gather")
	return nil
}
func (p proxy) ScatterAddRows(_, _ backend.Tensor, _ []int32, _ []float32) {
	p.unavailable("scatter-add")
}
func (p proxy) WriteRows(_, _ backend.Tensor, _ []int32) { p.unavailable("write-rows") }
func (p proxy) WriteMLAKV(_, _, _, _ backend.Tensor, _ *backend.MLAKVArgs) {
	p.unavailable("write-mla-kv")
}
func (p proxy) Attention(_, _, _ backend.Tensor, _ *backend.AttnArgs) backend.Tensor {
	p.unavailable("attention")
	return nil
}
func (p proxy) MLAAttention(_, _, _ backend.Tensor, _ *backend.MLAAttnArgs) backend.Tensor {
	p.unavailable("mla-attention")
	return nil
}
func (p proxy) Route(backend.Tensor, *backend.RouteArgs) (backend.Tensor, backend.Tensor) {
	p.unavailable("route")
	return nil, nil
}
func (p proxy) Experts(int, []backend.Tensor, []backend.Tensor, []backend.Tensor) backend.Tensor {
	p.unavailable("experts")
	return nil
}
func (p proxy) RoutedExperts(_, _, _, _ backend.Tensor) backend.Tensor {
	p.unavailable("routed-experts")
	return nil
}
