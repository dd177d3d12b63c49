//go:build cuda

package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// Tensor is the CUDA backend's tensor handle (backend.Tensor): a shape and
// dtype over device storage. Reshape views share their storage, so freeing
// any of them frees it for all.
type Tensor struct {
	dev   *Device
	st    *storage
	shape []int
	dt    tensor.DType
}

var _ backend.Tensor = (*Tensor)(nil)

// Shape returns the dimensions, outermost first (not to be modified).
func (t *Tensor) Shape() []int { return t.shape }

// DType returns the element type of the storage.
func (t *Tensor) DType() tensor.DType { return t.dt }

// rows and cols are the 2-D view every op uses: the first dimension and
// the product of the others.
func (t *Tensor) rows() int {
	if len(t.shape) == 0 {
		return 1
	}
	return t.shape[0]
}

func (t *Tensor) cols() int {
	if len(t.shape) == 0 {
		return 1
	}
	return tensor.Numel(t.shape[1:])
}

func (t *Tensor) numel() int { return tensor.Numel(t.shape) }

func (t *Tensor) ptr() driver.Ptr { return t.st.ptr }

// storage is one device allocation and who owns it: the scope it belongs to
// (nil: persistent) and, for persistent float tensors, copies converted to
// other dtypes on first use (see Device.as).
type storage struct {
	ptr   driver.Ptr
	bytes int64
	class driver.MemClass
	scope *scope
	freed atomic.Bool
	casts map[tensor.DType]*Tensor
	int4  *int4Layout // packed int4 weight (rank_int4.go); nil for dense storage
	fp8   *fp8Layout  // fp8 block-scaled weight (rank_fp8.go); nil for dense storage
}

// scope is the set of op outputs allocated since its PushScope.
type scope struct {
	members map[*storage]struct{}
}

// Device is one tensor-parallel rank's CUDA device (backend.Device). It
// computes in ActDType (f32, bf16 or f16: the model's dtype, as HF runs a
// bf16 checkpoint in bf16) with f32 accumulation in every kernel and GEMM.
// Several Devices may share one GPU (virtual ranks: --tp N on one GPU);
// each keeps its own scopes and accounts its own memory, and all of them
// queue their work on the GPU's one stream through its device thread, so
// an op call from any goroutine is ordered after every op queued before it.
//
// Memory: Upload (class weights) and Zeros (class kv) are persistent until
// Free; op outputs and Alloc belong to the innermost open scope and are
// freed by its PopScope (or by Free, which takes them out of the scope;
// a second Free does nothing). Out of device memory panics with a
// *backend.DeviceError wrapping the pool's *OOMError.
//
// Weights may be stored in a dtype other than the activations' (a f32
// checkpoint run with --dtype bf16 is converted by the loader; a
// checkpoint whose config.json dtype differs from its tensors is not):
// an op converts such a persistent tensor to the activation dtype on first
// use with the cast kernel and keeps the copy with it (accounted as
// weights), so Upload keeps the stored dtype as backend.Device requires.
//
// A Device is used by one rank goroutine; a collective or a hook may touch
// another rank's Device while that rank waits at the rendezvous.
type Device struct {
	g    *GPU   // nil only in the bookkeeping tests
	mem  memory // g's pool, or a fake
	name string
	rank int
	act  tensor.DType
	// w8a8 runs block-scaled fp8 linears as fp8 GEMMs on fp8 activations
	// (SetW8A8, rank_fp8.go); set before the first forward.
	w8a8 bool

	mu      sync.Mutex
	scopes  []*scope
	live    map[*storage]struct{}
	inUse   [driver.NumClasses]int64
	closed  bool
	uploads uploadCache
}

var _ backend.Device = (*Device)(nil)

// newDevice returns rank's device over g (or over mem alone when g is nil).
func newDevice(g *GPU, mem memory, name string, rank int, act tensor.DType) *Device {
	return &Device{g: g, mem: mem, name: name, rank: rank, act: act, live: map[*storage]struct{}{}}
}

// Name returns "cuda:N" (one rank per GPU) or "cuda:N/rankR" (virtual
// rank R on GPU N).
func (d *Device) Name() string { return d.name }

// ActDType returns the activation dtype: f32, bf16 or f16.
func (d *Device) ActDType() tensor.DType { return d.act }

// GPU returns the GPU the rank runs on.
func (d *Device) GPU() *GPU { return d.g }

// Rank returns the rank's index in its tensor-parallel group.
func (d *Device) Rank() int { return d.rank }

// fail builds the panic value of a failed op.
func (d *Device) fail(op string, err error) *backend.DeviceError {
	return &backend.DeviceError{Device: d.name, Op: op, Err: err}
}

// badArg panics with an ErrBadArgument DeviceError for op.
func (d *Device) badArg(op, format string, args ...any) {
	panic(d.fail(op, fmt.Errorf("%w: %s", driver.ErrBadArgument, fmt.Sprintf(format, args...))))
}

// do runs f on the GPU's thread as op (timed under HSDB_CUDA_PROFILE=1)
// and panics with a DeviceError when it fails.
func (d *Device) do(op string, f func() error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		panic(d.fail(op, driver.ErrClosed))
	}
	if d.g == nil {
		panic(d.fail(op, fmt.Errorf("%w: no GPU behind this device", driver.ErrNoDevice)))
	}
	if err := d.g.Do(func() error { return d.g.Profiled(op, f) }); err != nil {
		panic(d.fail(op, err))
	}
}

// get returns t as a tensor usable on this device's GPU, or panics naming
// op: a nil or foreign handle, a tensor on another GPU, or one already
// freed.
func (d *Device) get(op string, t backend.Tensor) *Tensor {
	x, ok := t.(*Tensor)
	switch {
	case !ok || x == nil:
		d.badArg(op, "a tensor of type %T is not a CUDA tensor", t)
	case x.dev.g != d.g:
		d.badArg(op, "tensor %v lives on %s, not on %s", x.shape, x.dev.name, d.name)
	case x.st.freed.Load():
		d.badArg(op, "tensor %v %s was used after Free", x.shape, x.dt)
	}
	return x
}

// float checks that x holds f32, bf16 or f16 (what the kernels take).
func (d *Device) float(op string, x *Tensor) {
	if x.dt != tensor.F32 && x.dt != tensor.BF16 && x.dt != tensor.F16 {
		d.badArg(op, "tensor %v has dtype %s; f32, bf16 or f16 was expected", x.shape, x.dt)
	}
}

func checkShape(shape []int) error {
	for _, n := range shape {
		if n < 0 {
			return fmt.Errorf("%w: negative dimension in shape %v", driver.ErrBadArgument, shape)
		}
	}
	return nil
}

// newTensor allocates a tensor of dtype dt and shape for class c, owned by
// the innermost scope when scoped (and a scope is open), else persistent.
// Called on the GPU thread inside an op, or from any goroutine.
func (d *Device) newTensor(dt tensor.DType, shape []int, c driver.MemClass, scoped bool) (*Tensor, error) {
	if err := checkShape(shape); err != nil {
		return nil, err
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, driver.ErrClosed
	}
	n := int64(tensor.Numel(shape)) * int64(dt.Size())
	var p driver.Ptr
	if n > 0 {
		var err error
		if p, err = d.mem.alloc(n, c); err != nil {
			return nil, err
		}
	}
	st := &storage{ptr: p, bytes: n, class: c}
	d.mu.Lock()
	if scoped && len(d.scopes) > 0 {
		st.scope = d.scopes[len(d.scopes)-1]
		st.scope.members[st] = struct{}{}
	}
	d.live[st] = struct{}{}
	d.inUse[c] += n
	d.mu.Unlock()
	return &Tensor{dev: d, st: st, shape: append([]int(nil), shape...), dt: dt}, nil
}

// output allocates an op output (scoped, class activations) on the GPU
// thread; use inside do.
func (d *Device) output(dt tensor.DType, shape ...int) (*Tensor, error) {
	return d.newTensor(dt, shape, driver.Activations, true)
}

// detach marks st freed and removes it from its scope and the live set;
// it returns the blocks to give back (st's and its casts'). d.mu is held.
func (d *Device) detach(st *storage, out []block) []block {
	if st.freed.Swap(true) {
		return out
	}
	if st.scope != nil {
		delete(st.scope.members, st)
		st.scope = nil
	}
	delete(d.live, st)
	d.inUse[st.class] -= st.bytes
	out = append(out, block{st.ptr, st.class})
	for _, c := range st.casts {
		out = d.detach(c.st, out)
	}
	st.casts = nil
	return out
}

// give returns blocks to the memory; a failure panics as op.
func (d *Device) give(op string, bs []block) {
	if len(bs) == 0 {
		return
	}
	if err := d.mem.free(bs); err != nil {
		panic(d.fail(op, err))
	}
}

// CopiesUploads reports true (backend.UploadCopier): Upload, UploadQuantized
// and their helpers copy host data to the GPU before returning, so the
// weight loader may hand them views of a checkpoint's memory mapping.
func (d *Device) CopiesUploads() bool { return true }

// Upload copies t to a new persistent device tensor of t's dtype (class
// weights). The host data may be reused once Upload returns.
func (d *Device) Upload(t *tensor.Tensor) backend.Tensor {
	if len(t.Data) != t.Numel()*t.DType.Size() {
		d.badArg("upload", "host tensor %v %s holds %d bytes", t.Shape, t.DType, len(t.Data))
	}
	x, err := d.newTensor(t.DType, t.Shape, driver.Weights, false)
	if err == nil && len(t.Data) > 0 {
		if err = d.mem.copyIn(x.ptr(), t.Data); err != nil {
			d.Free(x)
		}
	}
	if err != nil {
		panic(d.fail("upload", fmt.Errorf("%v %s: %w", t.Shape, t.DType, err)))
	}
	return x
}

// UploadQuantized keeps fp8 block-scaled weights as they are stored
// (rank_fp8.go: fp8 data plus f32 scales, logical shape [out, in], dtype
// F8E4M3) and int4 group-scaled weights packed (rank_int4.go: data plus
// scales, logical shape [out, in], dtype I32); other formats it
// dequantizes on the host (tensor.Quantized.Dequantize) and uploads as dt
// (Invalid: bf16).
func (d *Device) UploadQuantized(q *tensor.Quantized, dt tensor.DType) backend.Tensor {
	switch q.Format {
	case tensor.QuantFP8Block:
		return d.uploadFP8(q)
	case tensor.QuantInt4Group:
		return d.uploadInt4(q)
	}
	if dt == tensor.Invalid {
		dt = tensor.BF16
	}
	return d.Upload(q.Dequantize().Convert(dt))
}

// Zeros allocates a persistent zeroed tensor (class kv: the KV caches).
func (d *Device) Zeros(dt tensor.DType, shape ...int) backend.Tensor {
	x, err := d.newTensor(dt, shape, driver.KVCache, false)
	if err == nil && x.st.bytes > 0 {
		if err = d.mem.zero(x.ptr(), x.st.bytes); err != nil {
			d.Free(x)
		}
	}
	if err != nil {
		panic(d.fail("zeros", fmt.Errorf("%v %s: %w", shape, dt, err)))
	}
	return x
}

// Alloc allocates a zeroed activation tensor (ActDType) in the current
// scope.
func (d *Device) Alloc(shape ...int) backend.Tensor {
	x, err := d.newTensor(d.act, shape, driver.Activations, true)
	if err == nil && x.st.bytes > 0 {
		if err = d.mem.zero(x.ptr(), x.st.bytes); err != nil {
			d.Free(x)
		}
	}
	if err != nil {
		panic(d.fail("alloc", fmt.Errorf("%v %s: %w", shape, d.act, err)))
	}
	return x
}

// Free releases t's storage now (and every view of it, and its converted
// copies), taking it out of its scope. Freeing a freed tensor or nil does
// nothing. Work already queued that reads it still completes first.
func (d *Device) Free(t backend.Tensor) {
	if t == nil {
		return
	}
	x, ok := t.(*Tensor)
	if !ok || x == nil {
		d.badArg("free", "a tensor of type %T is not a CUDA tensor", t)
	}
	owner := x.dev
	owner.mu.Lock()
	bs := owner.detach(x.st, nil)
	owner.mu.Unlock()
	owner.give("free", bs)
}

// PushScope opens a scope: op outputs and Alloc from now on belong to it.
func (d *Device) PushScope() {
	d.mu.Lock()
	d.scopes = append(d.scopes, &scope{members: map[*storage]struct{}{}})
	d.mu.Unlock()
}

// PopScope closes the innermost scope, freeing every tensor it still owns
// except keep, which move to the enclosing scope (persistent at the
// outermost level). Keeping a tensor the scope does not own (a weight, an
// outer scope's tensor, nil) does nothing. Without an open scope PopScope
// does nothing.
func (d *Device) PopScope(keep ...backend.Tensor) {
	d.mu.Lock()
	if len(d.scopes) == 0 {
		d.mu.Unlock()
		return
	}
	top := d.scopes[len(d.scopes)-1]
	d.scopes = d.scopes[:len(d.scopes)-1]
	var parent *scope
	if len(d.scopes) > 0 {
		parent = d.scopes[len(d.scopes)-1]
	}
	for _, k := range keep {
		x, ok := k.(*Tensor)
		if !ok || x == nil || x.st.scope != top {
			continue
		}
		delete(top.members, x.st)
		x.st.scope = parent
		if parent != nil {
			parent.members[x.st] = struct{}{}
		}
	}
	var bs []block
	for st := range top.members {
		bs = d.detach(st, bs)
	}
	d.mu.Unlock()
	d.give("pop_scope", bs)
}

// ScopeDepth returns the number of open scopes (for UnwindScopes).
func (d *Device) ScopeDepth() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.scopes)
}

// UnwindScopes closes scopes, freeing everything they own, until depth
// remain: the forward driver calls it when a step ends early (a stop, an
// error) so the step's activations do not leak. It never panics (it runs
// while a panic unwinds); a failure to free is dropped.
func (d *Device) UnwindScopes(depth int) {
	d.mu.Lock()
	var bs []block
	for len(d.scopes) > max(depth, 0) {
		top := d.scopes[len(d.scopes)-1]
		d.scopes = d.scopes[:len(d.scopes)-1]
		for st := range top.members {
			bs = d.detach(st, bs)
		}
	}
	d.mu.Unlock()
	if len(bs) > 0 {
		_ = d.mem.free(bs)
	}
}

// Reshape returns a view of t with a new shape of the same element count.
func (d *Device) Reshape(t backend.Tensor, shape ...int) backend.Tensor {
	x := d.get("reshape", t)
	if checkShape(shape) != nil || tensor.Numel(shape) != x.numel() {
		d.badArg("reshape", "%v -> %v changes the element count", x.shape, shape)
	}
	return &Tensor{dev: x.dev, st: x.st, shape: append([]int(nil), shape...), dt: x.dt}
}

// MemoryInUse returns the bytes of this rank's live tensors (weights, KV
// caches, activations and converted weight copies), as requested (the
// pool rounds blocks up by at most 2 MiB).
func (d *Device) MemoryInUse() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, v := range d.inUse {
		n += v
	}
	return n
}

// MemoryByClass returns MemoryInUse split by class (indexed by MemClass:
// weights, kv, activations).
func (d *Device) MemoryByClass() [3]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inUse
}

// Close frees every tensor of the rank (weights, caches, activations) and
// its internal arrays; ops panic with ErrClosed afterwards. The GPU stays
// open for other ranks. Close is idempotent and returns the pool's error.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	var bs []block
	for st := range d.live {
		bs = d.detach(st, bs)
	}
	d.scopes = nil
	bs = append(bs, d.uploads.drain()...)
	d.mu.Unlock()
	if len(bs) == 0 {
		return nil
	}
	if err := d.mem.free(bs); err != nil {
		return fmt.Errorf("%s: close: %w", d.name, err)
	}
	return nil
}
