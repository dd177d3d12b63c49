//go:build cuda

package driver

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"hsdb/engine/bytesize"
	"hsdb/engine/tensor"
	"hsdb/kernels"
)

func TestDeviceInfo(t *testing.T) {
	d := gpu(t)
	n, _ := DeviceCount()
	v, _ := DriverVersion()
	major, minor := d.ComputeCapability()
	free, total, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: sm_%d%d, %d SMs, driver CUDA %d, %d device(s), %s free of %s", d, major, minor, d.sms, v, n, bytesize.Binary(free), bytesize.Binary(total))
	if total != d.TotalMemory() || free <= 0 || free > total {
		t.Errorf("MemInfo free %d total %d, device total %d", free, total, d.TotalMemory())
	}
	if major < 7 {
		t.Errorf("compute capability %d.%d: the kernels' PTX targets 9.0", major, minor)
	}
}

// TestLoadAllModules JIT-compiles every embedded module and resolves each
// of its entry points, so a PTX the driver rejects fails here by name.
func TestLoadAllModules(t *testing.T) {
	d := gpu(t)
	for _, name := range kernels.Names() {
		m, _ := kernels.Lookup(name)
		var entries []string
		for _, line := range strings.Split(m.PTX, "\n") {
			if e, ok := strings.CutPrefix(line, ".visible .entry "); ok {
				entries = append(entries, strings.TrimSuffix(e, "("))
			}
		}
		err := d.Do(func() error {
			for _, e := range entries {
				if _, err := d.function(name, e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("module %s: %v", name, err)
		}
	}
}

// TestDoFromManyGoroutines: closures from many goroutines run one at a time
// on the device thread (a data race on the counter would be caught by
// -race, and the count would be off without the serialisation).
func TestDoFromManyGoroutines(t *testing.T) {
	d := gpu(t)
	counter := 0
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				d.Do(func() error { counter++; return nil })
			}
		}()
	}
	wg.Wait()
	if counter != 1600 {
		t.Fatalf("counter = %d, want 1600", counter)
	}
	// Nested Do on the device thread runs inline instead of deadlocking.
	err := d.Do(func() error { return d.Do(func() error { return errors.New("inner") }) })
	if err == nil || err.Error() != "inner" {
		t.Fatalf("nested Do: %v", err)
	}
}

// TestOutOfMemoryError provokes an out-of-memory through the pool limit
// and checks the error is the documented one, then a real one by asking for
// more than the device has.
func TestOutOfMemoryError(t *testing.T) {
	d := gpu(t)
	w, err := d.Alloc(64<<20, Weights)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Free()
	st, _ := d.MemoryStats()
	if err := d.SetMemoryLimit(st.InUse[Weights] + st.InUse[KVCache] + st.InUse[Activations] + st.Cached + 8<<20); err != nil {
		t.Fatal(err)
	}
	_, err = d.Alloc(100<<20, Activations)
	d.SetMemoryLimit(0)
	var oom *OOMError
	if !errors.As(err, &oom) || !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("over the limit: %v, want *OOMError", err)
	}
	if oom.Requested != 100<<20 || oom.InUse[Weights] < 64<<20 {
		t.Errorf("oom %+v", oom)
	}
	t.Logf("limit: %v", err)
	_, err = d.Alloc(d.TotalMemory()+1<<30, Activations)
	if !errors.As(err, &oom) || oom.Cause == nil {
		t.Fatalf("beyond the device: %v, want *OOMError with the driver's error", err)
	}
	t.Logf("driver: %v", err)
}

// TestPinnedAsyncCopy queues a device-to-host copy into pinned memory and
// checks the bytes after Wait.
func TestPinnedAsyncCopy(t *testing.T) {
	d := gpu(t)
	rng := rand.New(rand.NewPCG(41, 42))
	v := randn(rng, 1<<16, 1)
	b := upload(t, d, v, tensor.F32)
	h, err := d.AllocHost(int64(4 * len(v)))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	ev, err := d.CopyToHostAsync(h, 0, b.Ptr(), int64(4*len(v)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Wait(); err != nil {
		t.Fatal(err)
	}
	got := (&tensor.Tensor{Shape: []int{len(v)}, DType: tensor.F32, Data: h.Bytes()}).ToF32()
	assertClose(t, "pinned copy", got, v, 0, 0)
	if _, err := d.CopyToHostAsync(h, 8, b.Ptr(), int64(4*len(v))); !errorsIsBadArgument(err) {
		t.Errorf("copy past the pinned buffer: %v, want ErrBadArgument", err)
	}
}

// TestNCCL builds one communicator per visible GPU and checks all-reduce
// and all-gather against values computed by hand: rank r contributes
// r+1+i/1000 at element i, so the sum is world(world+1)/2 + world·i/1000.
func TestNCCL(t *testing.T) {
	d0 := gpu(t)
	if _, err := NCCLVersion(); err != nil {
		t.Skipf("no NCCL: %v", err)
	}
	n, _ := DeviceCount()
	devs := []*GPU{d0}
	for i := 1; i < n; i++ {
		d, err := Open(i)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		devs = append(devs, d)
	}
	comms, err := InitComms(devs)
	if err != nil {
		t.Fatal(err)
	}
	defer Each(comms, func(c *NCCLComm) error { return c.Close() })
	v, _ := NCCLVersion()
	t.Logf("NCCL %d, world size %d", v, len(comms))
	const count = 4099
	world := len(comms)
	bufs := make([]*Buffer, world)
	gathers := make([]*Buffer, world)
	for r, d := range devs {
		x := make([]float32, count)
		for i := range x {
			x[i] = float32(r+1) + float32(i)/1000
		}
		bufs[r] = upload(t, d, x, tensor.F32)
		gathers[r] = poisoned(t, d, world*count, tensor.F32)
	}
	err = Each(comms, func(c *NCCLComm) error {
		if err := c.AllGather(bufs[c.Rank()].Ptr(), gathers[c.Rank()].Ptr(), count, tensor.F32); err != nil {
			return err
		}
		return c.AllReduceSum(bufs[c.Rank()].Ptr(), bufs[c.Rank()].Ptr(), count, tensor.F32)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Each(comms, func(c *NCCLComm) error { return c.AsyncError() }); err != nil {
		t.Fatal(err)
	}
	for r, d := range devs {
		want := make([]float32, count)
		for i := range want {
			want[i] = float32(world*(world+1)/2) + float32(world)*float32(i)/1000
		}
		assertClose(t, "all-reduce", download(t, d, bufs[r], count, tensor.F32), want, 1e-4, 1e-6)
		wantG := make([]float32, world*count)
		for q := range world {
			for i := range count {
				wantG[q*count+i] = float32(q+1) + float32(i)/1000
			}
		}
		assertClose(t, "all-gather", download(t, d, gathers[r], world*count, tensor.F32), wantG, 0, 0)
	}
}
