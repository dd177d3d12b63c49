package cpu

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Tensor is the CPU backend's tensor: a host tensor. Activations are F32;
// weights may be F32, BF16 or F16 (the loader's copies, never views of a
// memory-mapped checkpoint).
type Tensor struct{ *tensor.Tensor }

// Shape returns the tensor's dimensions, outermost first.
func (t Tensor) Shape() []int { return t.Tensor.Shape }

// DType returns the element type of the tensor's storage.
func (t Tensor) DType() tensor.DType { return t.Tensor.DType }

// Device is the CPU backend device for one rank. It is safe for use by one
// goroutine at a time (each virtual rank owns its Device); its ops use a
// shared pool of worker goroutines for large products. Small op outputs
// made inside a scope are reused after the scope closes (arena.go).
type Device struct {
	name string
	mu   sync.Mutex
	held map[*tensor.Tensor]int64 // persistent tensors (Upload, Zeros) and their bytes
	// inUse is the sum of held.
	inUse atomic.Int64
	ar    arena     // op outputs of the open scopes, and reusable buffers
	rope  ropeCache // the last RoPE call's cos and sin
}

// New returns a CPU device named "cpu" (or "cpu:RANK" when rank >= 0, so
// messages say which virtual rank failed).
func New(rank int) *Device {
	if rank < 0 {
		return &Device{name: "cpu"}
	}
	return &Device{name: fmt.Sprintf("cpu:%d", rank)}
}

var _ backend.Device = (*Device)(nil)

// Name returns "cpu" or "cpu:RANK".
func (d *Device) Name() string { return d.name }

// ActDType is F32: the CPU backend computes in float32.
func (d *Device) ActDType() tensor.DType { return tensor.F32 }

// MemoryInUse returns the bytes of persistent tensors: weights made by
// Upload (aliased pages of a mapped checkpoint count too: they become
// resident as they are read) and caches made by Zeros, less what Free gave
// back. Op outputs are not counted (nor the at most 16 MiB of buffers kept
// for reuse, arena.go).
func (d *Device) MemoryInUse() int64 { return d.inUse.Load() }

func host(t backend.Tensor) *tensor.Tensor {
	switch v := t.(type) {
	case Tensor:
		return v.Tensor
	case nil:
		return nil
	}
	panic(&backend.DeviceError{Device: "cpu", Op: "cast", Err: fmt.Errorf("tensor of type %T is not a CPU tensor", t)})
}

func f32(t backend.Tensor) []float32 {
	h := host(t)
	if h.DType != tensor.F32 {
		panic(&backend.DeviceError{Device: "cpu", Op: "f32", Err: fmt.Errorf("activation of dtype %s where f32 was expected", h.DType)})
	}
	return h.F32()
}

// boxed is an op output's tensor header together with room for its shape,
// so that wrap allocates once.
type boxed struct {
	t     tensor.Tensor
	shape [3]int
}

// wrap returns v [shape] as an f32 tensor without copying v: the header and
// the shape (up to 3 dims) are one allocation.
func wrap(v []float32, shape ...int) Tensor {
	if tensor.Numel(shape) != len(v) {
		panic(&backend.DeviceError{Device: "cpu", Op: "wrap", Err: fmt.Errorf("%d values for shape %v", len(v), append([]int(nil), shape...))}) // a copy, so shape does not escape
	}
	b := &boxed{}
	var dims []int
	if len(shape) <= len(b.shape) {
		n := copy(b.shape[:], shape)
		dims = b.shape[:n:n]
	} else {
		dims = append([]int(nil), shape...)
	}
	var data []byte
	if len(v) > 0 {
		data = unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
	}
	b.t = tensor.Tensor{Shape: dims, DType: tensor.F32, Data: data}
	return Tensor{&b.t}
}

// f32View returns t's values as float32: a view of an F32 tensor, a widened
// copy of any other dtype (small parameters such as norm weights).
func f32View(t *tensor.Tensor) []float32 {
	if t.DType == tensor.F32 {
		return t.F32()
	}
	return t.ToF32()
}

// Upload wraps t as a device tensor. Aligned data is aliased, not copied
// (so the device is no backend.UploadCopier: the weight loader gives it
// memory of its own, not views of a checkpoint's mapping).
func (d *Device) Upload(t *tensor.Tensor) backend.Tensor {
	if !t.Aligned() {
		c := &tensor.Tensor{Shape: append([]int(nil), t.Shape...), DType: t.DType, Data: alignedBytes(len(t.Data))}
		copy(c.Data, t.Data)
		d.hold(c)
		return Tensor{c}
	}
	d.hold(t)
	return Tensor{t}
}

// UploadQuantized dequantizes q exactly (tensor.Quantized.Dequantize) and
// uploads it as dt (Invalid: f32): the CPU backend computes on dense weights.
func (d *Device) UploadQuantized(q *tensor.Quantized, dt tensor.DType) backend.Tensor {
	w := q.Dequantize()
	if dt != tensor.Invalid && dt != tensor.F32 {
		w = w.Convert(dt)
	}
	return d.Upload(w)
}

func (d *Device) hold(t *tensor.Tensor) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		d.held = map[*tensor.Tensor]int64{}
	}
	if _, ok := d.held[t]; !ok {
		d.held[t] = int64(len(t.Data))
		d.inUse.Add(int64(len(t.Data)))
	}
}

// Zeros allocates a zeroed tensor of dtype dt.
func (d *Device) Zeros(dt tensor.DType, shape ...int) backend.Tensor {
	t := tensor.New(dt, shape...)
	d.hold(t)
	return Tensor{t}
}

// Alloc returns a zeroed float32 activation tensor [shape], owned by the
// current scope like an op output.
func (d *Device) Alloc(shape ...int) backend.Tensor {
	t, _ := d.newOutput(true, shape...)
	return t
}

// Free ends t's life: a persistent tensor stops being counted (its memory
// returns when the garbage collector runs or, for a mapped weight, when the
// mapping closes); an op output owned by an open scope is reused by later
// ops. t must not be used afterwards; a second Free does nothing.
func (d *Device) Free(t backend.Tensor) {
	h, ok := t.(Tensor)
	if !ok {
		return
	}
	d.mu.Lock()
	n, held := d.held[h.Tensor]
	if held {
		d.inUse.Add(-n)
		delete(d.held, h.Tensor)
	}
	d.mu.Unlock()
	if !held {
		d.ar.freeOutput(t)
	}
}

// Reshape returns a view of t with a new shape.
func (d *Device) Reshape(t backend.Tensor, shape ...int) backend.Tensor {
	return Tensor{host(t).Reshape(shape...)}
}

func checkRange(t *tensor.Tensor, r0, r1, c0, c1 int) {
	if r0 < 0 || r1 > t.Rows() || r0 > r1 || c0 < 0 || c1 > t.Cols() || c0 > c1 {
		panic(&backend.DeviceError{Device: "cpu", Op: "slice", Err: fmt.Errorf("slice [%d:%d, %d:%d] out of range for %v", r0, r1, c0, c1, t.Shape)})
	}
}

// ToHost copies a [r0:r1, c0:c1] slice of t to a new f32 host tensor.
func (d *Device) ToHost(t backend.Tensor, r0, r1, c0, c1 int) *tensor.Tensor {
	h := host(t)
	checkRange(h, r0, r1, c0, c1)
	cols := h.Cols()
	out := make([]float32, 0, (r1-r0)*(c1-c0))
	if h.DType == tensor.F32 {
		v := h.F32()
		for r := r0; r < r1; r++ {
			out = append(out, v[r*cols+c0:r*cols+c1]...)
		}
	} else {
		for r := r0; r < r1; r++ {
			for c := c0; c < c1; c++ {
				out = append(out, float32(h.At(r*cols+c)))
			}
		}
	}
	return tensor.FromF32(out, r1-r0, c1-c0)
}

// Moments reduces the [r0:r1, c0:c1] slice of t in one pass.
func (d *Device) Moments(t backend.Tensor, r0, r1, c0, c1 int) tensor.Moments {
	h := host(t)
	checkRange(h, r0, r1, c0, c1)
	cols := h.Cols()
	var m tensor.Moments
	if h.DType == tensor.F32 {
		v := h.F32()
		for r := r0; r < r1; r++ {
			m.Merge(tensor.MomentsF32(v[r*cols+c0 : r*cols+c1]))
		}
		return m
	}
	for r := r0; r < r1; r++ {
		for c := c0; c < c1; c++ {
			m.Add(h.At(r*cols + c))
		}
	}
	return m
}

// alignedBytes returns n zeroed bytes whose address is 8-byte aligned.
func alignedBytes(n int) []byte {
	if n == 0 {
		return nil
	}
	buf := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), n)
}
