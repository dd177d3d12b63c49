//go:build cuda

package driver

// #include "shim_driver.h"
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"hsdb/engine/bytesize"
)

// GPU is one GPU driven by hsdb: a goroutine locked to its own OS thread
// owns the device's primary CUDA context and one non-blocking stream, and
// runs submitted closures in order, so no other goroutine ever touches the
// context (the driver API's current context is per thread). Every exported
// method may be called from any goroutine; it runs on the device thread
// through Do. All work is queued on the one stream, so device operations
// happen in submission order.
//
// The primary context is the one the CUDA runtime uses, so cuBLAS and NCCL
// (runtime-based libraries) share it.
type GPU struct {
	ordinal  int
	name     string
	totalMem int64
	sms      int
	ccMajor  int
	ccMinor  int

	work   chan func()
	tid    int // OS thread id of the device thread
	closed atomic.Bool
	quit   chan struct{}
	wg     sync.WaitGroup

	// Owned by the device thread.
	dev    cuDevice
	ctx    cuContext
	st     cuStream   // the stream, as the driver API (cuAPI) takes it
	stream C.CUstream // the same stream for the C shims (cuBLAS, NCCL, MoE)
	mods   map[string]*module
	funcs  map[string]*function
	pool   *pool
	pinned *pinnedCache
	blas   *blasHandle
	sync   bool // HSDB_CUDA_SYNC=1: synchronise after every launch
	prof   []profRec
}

// Open starts the device thread for GPU ordinal (0-based, after
// CUDA_VISIBLE_DEVICES), retains its primary context and creates its
// stream. It returns ErrNoDriver or ErrNoDevice (errors.Is) when there is no
// usable GPU, an error naming the ordinal and the count when ordinal is out
// of range, or the driver's *Error.
func Open(ordinal int) (*GPU, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: cuda device %d does not exist (%d visible)", ErrNoDevice, ordinal, n)
	}
	d := &GPU{
		ordinal: ordinal,
		work:    make(chan func()), // unbuffered: a job is handed over only to a running loop
		quit:    make(chan struct{}),
		mods:    map[string]*module{},
		funcs:   map[string]*function{},
		sync:    os.Getenv("HSDB_CUDA_SYNC") == "1",
	}
	ready := make(chan error, 1)
	d.wg.Add(1)
	go d.loop(ready)
	if err := <-ready; err != nil {
		d.wg.Wait()
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	return d, nil
}

// loop is the device thread.
func (d *GPU) loop(ready chan<- error) {
	defer d.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d.tid = syscall.Gettid()
	if err := d.setup(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case f := <-d.work:
			f()
		case <-d.quit:
			// Drain work submitted before Close so no caller waits forever.
			for {
				select {
				case f := <-d.work:
					f()
				default:
					d.teardown()
					return
				}
			}
		}
	}
}

func (d *GPU) setup() error {
	var err error
	if d.dev, err = drv.device(d.ordinal); err != nil {
		return err
	}
	if d.name, err = drv.deviceName(d.dev); err != nil {
		return err
	}
	if d.totalMem, err = drv.deviceTotalMem(d.dev); err != nil {
		return err
	}
	for _, a := range []struct {
		attr int
		dst  *int
	}{{16, &d.sms}, {75, &d.ccMajor}, {76, &d.ccMinor}} { // MULTIPROCESSOR_COUNT, COMPUTE_CAPABILITY_MAJOR/MINOR
		if *a.dst, err = drv.deviceAttribute(d.dev, a.attr); err != nil {
			return err
		}
	}
	if d.ctx, err = drv.primaryCtxRetain(d.dev); err != nil {
		return err
	}
	if err := drv.ctxSetCurrent(d.ctx); err != nil {
		drv.primaryCtxRelease(d.dev)
		return err
	}
	if d.st, err = drv.streamCreate(); err != nil {
		drv.primaryCtxRelease(d.dev)
		return err
	}
	d.stream = rawStream(d.st)
	d.pool = newPool(d.ordinal, driverAllocator{}, d.memInfo)
	d.pinned = &pinnedCache{}
	return nil
}

func (d *GPU) teardown() {
	drv.streamSynchronize(d.st)
	for _, r := range d.prof {
		drv.eventDestroy(r.a)
		drv.eventDestroy(r.b)
	}
	if d.blas != nil {
		d.blas.destroy()
	}
	for _, m := range d.mods {
		drv.moduleUnload(m.h)
	}
	d.pinned.release()
	d.pool.releaseAll()
	drv.streamDestroy(d.st)
	drv.primaryCtxRelease(d.dev)
}

// Do runs f on the device thread and returns its error. Calls from the
// device thread itself (f calling another method) run inline, so methods
// compose. A panic in f is returned as an error naming the device. After
// Close it returns ErrClosed.
func (d *GPU) Do(f func() error) (err error) {
	if d.tid != 0 && syscall.Gettid() == d.tid {
		return f()
	}
	if d.closed.Load() {
		return fmt.Errorf("cuda:%d: %w", d.ordinal, ErrClosed)
	}
	done := make(chan error, 1)
	job := func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("cuda:%d: panic on the device thread: %v", d.ordinal, p)
			}
		}()
		done <- f()
	}
	select {
	case d.work <- job:
	case <-d.quit:
		return fmt.Errorf("cuda:%d: %w", d.ordinal, ErrClosed)
	}
	return <-done
}

// Close finishes queued work, frees every cached and live allocation,
// unloads modules, destroys the stream and releases the primary context.
// Buffers still held by callers become invalid. Close is idempotent.
func (d *GPU) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	close(d.quit)
	d.wg.Wait()
	return nil
}

// Ordinal returns the device's index (after CUDA_VISIBLE_DEVICES).
func (d *GPU) Ordinal() int { return d.ordinal }

// Name returns the device's product name ("NVIDIA H200").
func (d *GPU) Name() string { return d.name }

// TotalMemory returns the device's memory in bytes.
func (d *GPU) TotalMemory() int64 { return d.totalMem }

// SMs returns the number of streaming multiprocessors (132 on an H200).
func (d *GPU) SMs() int { return d.sms }

// ComputeCapability returns the major and minor compute capability (9, 0
// for H100/H200).
func (d *GPU) ComputeCapability() (major, minor int) { return d.ccMajor, d.ccMinor }

// String returns "cuda:N (NAME, X GiB)".
func (d *GPU) String() string {
	return fmt.Sprintf("cuda:%d (%s, %s)", d.ordinal, d.name, bytesize.Binary(d.totalMem))
}

// Synchronize waits until all work queued on the device's stream has
// finished and returns the first asynchronous error (a kernel fault) as a
// driver *Error.
func (d *GPU) Synchronize() error {
	return d.Do(func() error { return drv.streamSynchronize(d.st) })
}

// memInfo returns the driver's free and total bytes (device thread only).
func (d *GPU) memInfo() (free, total int64, err error) {
	return drv.memGetInfo()
}

// MemInfo returns the driver's view of free and total device memory in
// bytes (all processes included).
func (d *GPU) MemInfo() (free, total int64, err error) {
	err = d.Do(func() error {
		var e error
		free, total, e = d.memInfo()
		return e
	})
	return
}
