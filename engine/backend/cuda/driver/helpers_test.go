//go:build cuda

// Test helpers of the driver tests; engine/backend/cuda's helpers_test.go
// holds the same for the op and rank tests (a test file cannot be shared
// between the two packages).

package driver

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"hsdb/engine/tensor"
)

var (
	testDevOnce sync.Once
	testDev     *GPU
	testDevErr  error
)

// gpu returns device 0, opened once for the whole test binary, or skips
// the test with the reason when this machine has no usable GPU.
func gpu(t testing.TB) *GPU {
	t.Helper()
	testDevOnce.Do(func() { testDev, testDevErr = SharedGPU(0) })
	if testDevErr != nil {
		if NoGPU(testDevErr) {
			t.Skipf("no CUDA GPU here: %v", testDevErr)
		}
		t.Fatalf("opening cuda:0: %v", testDevErr)
	}
	return testDev
}

// floatDTypes are the activation dtypes every kernel is instantiated for.
var floatDTypes = []tensor.DType{tensor.F32, tensor.BF16, tensor.F16}

// randn returns n values from N(0, scale²) that are never exactly zero, so
// an output left untouched or zeroed by mistake cannot match.
func randn(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := rng.NormFloat64() * scale
		if math.Abs(x) < 1e-3*scale {
			x = 1e-3 * scale
		}
		v[i] = float32(x)
	}
	return v
}

// roundTo returns v as the device will hold it in dtype dt: the reference
// computations start from exactly the values the kernels read.
func roundTo(v []float32, dt tensor.DType) []float32 {
	return tensor.FromF32(append([]float32(nil), v...), len(v)).Convert(dt).ToF32()
}

// upload copies v, converted to dt, into a new device buffer.
func upload(t testing.TB, d *GPU, v []float32, dt tensor.DType) *Buffer {
	t.Helper()
	data := tensor.FromF32(append([]float32(nil), v...), len(v)).Convert(dt).Data
	return uploadBytes(t, d, data)
}

func uploadBytes(t testing.TB, d *GPU, data []byte) *Buffer {
	t.Helper()
	b, err := d.Alloc(int64(len(data)), Activations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	if err := d.CopyToDevice(b.Ptr(), data); err != nil {
		t.Fatal(err)
	}
	return b
}

// poisoned returns a device buffer of n elements of dt filled with 0xff
// bytes (NaN in f32, bf16 and f16), so any element a kernel fails to write
// shows up as NaN.
func poisoned(t testing.TB, d *GPU, n int, dt tensor.DType) *Buffer {
	t.Helper()
	b, err := d.Alloc(int64(n*dt.Size()), Activations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	if err := d.Memset(b.Ptr(), 0xff, int64(n*dt.Size())); err != nil {
		t.Fatal(err)
	}
	return b
}

// download reads n elements of dt back as float32.
func download(t testing.TB, d *GPU, b *Buffer, n int, dt tensor.DType) []float32 {
	t.Helper()
	host := tensor.New(dt, n)
	if err := d.CopyToHost(host.Data, b.Ptr()); err != nil {
		t.Fatal(err)
	}
	return host.ToF32()
}

// tol is the comparison tolerance for outputs stored in dt: one rounding of
// the output (bf16 keeps 8 significant bits, f16 11) plus f32 summation
// order differences.
func tol(dt tensor.DType) (atol, rtol float64) {
	switch dt {
	case tensor.BF16:
		return 1e-2, 1.6e-2
	case tensor.F16:
		return 2e-3, 2e-3
	}
	return 1e-5, 1e-5
}

// assertClose fails when some |got-want| > atol + rtol·|want| or when got
// has a NaN where want has none; it reports the worst element.
func assertClose(t testing.TB, name string, got, want []float32, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, wi, bad := 0.0, -1, 0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) {
			if !math.IsNaN(g) {
				bad++
				if wi < 0 {
					wi = i
				}
			}
			continue
		}
		e := math.Abs(g - w)
		if math.IsNaN(g) || e > atol+rtol*math.Abs(w) {
			bad++
			if math.IsNaN(g) {
				e = math.Inf(1)
			}
		}
		if e > worst || (wi < 0 && bad > 0) {
			worst, wi = e, i
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off (atol %g rtol %g); worst at %d: got %v want %v", name, bad, len(got), atol, rtol, wi, got[wi], want[wi])
	}
}

func errorsIsBadArgument(err error) bool { return errors.Is(err, ErrBadArgument) }
