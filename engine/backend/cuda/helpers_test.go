//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/backend/cuda/internal/cudatest"
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
	testDevOnce.Do(func() { testDev, testDevErr = sharedGPU(0) })
	if testDevErr != nil {
		if driver.NoGPU(testDevErr) {
			t.Skipf("no CUDA GPU here: %v", testDevErr)
		}
		t.Fatalf("opening cuda:0: %v", testDevErr)
	}
	return testDev
}

// upload copies v, converted to dt, into a new device buffer.
func upload(t testing.TB, d *GPU, v []float32, dt tensor.DType) *driver.Buffer {
	t.Helper()
	data := tensor.FromF32(append([]float32(nil), v...), len(v)).Convert(dt).Data
	return uploadBytes(t, d, data)
}

func uploadBytes(t testing.TB, d *GPU, data []byte) *driver.Buffer {
	t.Helper()
	b, err := d.Alloc(int64(len(data)), driver.Activations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	if err := d.CopyToDevice(b.Ptr(), data); err != nil {
		t.Fatal(err)
	}
	return b
}

func uploadI32(t testing.TB, d *GPU, v []int32) *driver.Buffer {
	t.Helper()
	return uploadBytes(t, d, int32Bytes(v))
}

// poisoned returns a device buffer of n elements of dt filled with 0xff
// bytes (NaN in f32, bf16 and f16), so any element a kernel fails to write
// shows up as NaN.
func poisoned(t testing.TB, d *GPU, n int, dt tensor.DType) *driver.Buffer {
	t.Helper()
	b, err := d.Alloc(int64(n*dt.Size()), driver.Activations)
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
func download(t testing.TB, d *GPU, b *driver.Buffer, n int, dt tensor.DType) []float32 {
	t.Helper()
	host := tensor.New(dt, n)
	if err := d.CopyToHost(host.Data, b.Ptr()); err != nil {
		t.Fatal(err)
	}
	return host.ToF32()
}

// The host-side helpers are cudatest's, shared by the tests of
// engine/backend/cuda and engine/backend/cuda/driver.
var (
	floatDTypes    = cudatest.FloatDTypes
	randn          = cudatest.Randn
	roundTo        = cudatest.RoundTo
	tol            = cudatest.Tol
	assertClose    = cudatest.AssertClose
	assertCloseNaN = cudatest.AssertCloseNaN
)

func dtName(op string, dt tensor.DType) string { return fmt.Sprintf("%s/%s", op, dt) }

func errorsIsBadArgument(err error) bool { return errors.Is(err, driver.ErrBadArgument) }
