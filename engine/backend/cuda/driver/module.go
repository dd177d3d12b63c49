//go:build cuda

package driver

import (
	"encoding/binary"
	"fmt"
	"math"

	"hsdb/kernels"
)

// module is a loaded PTX module (device thread only).
type module struct {
	name string
	h    cuModule
}

// function is a kernel entry point with the largest dynamic shared memory
// it has been allowed so far.
type function struct {
	name    string
	h       cuFunction
	maxSmem int
}

// Dim3 is a CUDA grid or block size; Launch treats a zero Y or Z as 1.
type Dim3 struct{ X, Y, Z uint32 }

// module loads kernels/ptx/NAME.ptx on first use (device thread only); the
// driver JIT-compiles it for this GPU. A JIT failure returns the driver's
// error with the JIT's log.
func (d *GPU) module(name string) (*module, error) {
	if m, ok := d.mods[name]; ok {
		return m, nil
	}
	src, err := kernels.Lookup(name)
	if err != nil {
		return nil, err
	}
	m := &module{name: name}
	h, log, err := drv.moduleLoadPTX(src.PTX)
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: loading kernels/ptx/%s.ptx (source %s): %w\n%s", d.ordinal, name,
			src.SourceSHA256[:12], err, log)
	}
	m.h = h
	d.mods[name] = m
	return m, nil
}

// function returns kernel fn of module mod, loading the module if needed
// (device thread only).
func (d *GPU) function(mod, fn string) (*function, error) {
	key := mod + "/" + fn
	if f, ok := d.funcs[key]; ok {
		return f, nil
	}
	m, err := d.module(mod)
	if err != nil {
		return nil, err
	}
	f := &function{name: fn, maxSmem: 48 << 10}
	if f.h, err = drv.moduleFunction(m.h, fn); err != nil {
		return nil, fmt.Errorf("cuda:%d: kernel %s in kernels/%s.cu: %w", d.ordinal, fn, mod, err)
	}
	d.funcs[key] = f
	return f, nil
}

// Launch runs kernel mod/fn on the device's stream (device thread only).
// args are the kernel's parameters in order, each one of Ptr (a device
// pointer), int32 (C int), int64 (long long), uint32 (unsigned) or float32
// (float); anything else is a programming error reported as an error.
// smem is the dynamic shared memory in bytes; above the default 48 KiB the
// function is opted in first. With HSDB_CUDA_SYNC=1 the stream is
// synchronised after the launch, so an asynchronous fault is reported by
// the kernel that caused it.
func (d *GPU) Launch(mod, fn string, grid, block Dim3, smem int, args ...any) error {
	f, err := d.function(mod, fn)
	if err != nil {
		return err
	}
	if smem > f.maxSmem {
		if err := drv.funcSetMaxDynamicSmem(f.h, smem); err != nil {
			return fmt.Errorf("cuda:%d: %s needs %d bytes of shared memory: %w", d.ordinal, fn, smem, err)
		}
		f.maxSmem = smem
	}
	if len(args) > maxKernelArgs {
		return fmt.Errorf("cuda: %s: %d kernel arguments, at most %d", fn, len(args), maxKernelArgs)
	}
	var buf [maxKernelArgs * 8]byte
	for i, a := range args {
		s := buf[8*i : 8*i+8]
		switch v := a.(type) {
		case Ptr:
			binary.LittleEndian.PutUint64(s, uint64(v))
		case int64:
			binary.LittleEndian.PutUint64(s, uint64(v))
		case int32:
			binary.LittleEndian.PutUint32(s, uint32(v))
		case uint32:
			binary.LittleEndian.PutUint32(s, v)
		case float32:
			binary.LittleEndian.PutUint32(s, math.Float32bits(v))
		default:
			return fmt.Errorf("cuda: %s argument %d has Go type %T (want Ptr, int32, int64, uint32 or float32)", fn, i, a)
		}
	}
	if grid.Y == 0 {
		grid.Y = 1
	}
	if grid.Z == 0 {
		grid.Z = 1
	}
	if block.Y == 0 {
		block.Y = 1
	}
	if block.Z == 0 {
		block.Z = 1
	}
	if grid.X == 0 {
		return nil // nothing to do: an empty tensor
	}
	if err := drv.launch(f.h, grid, block, smem, d.st, &buf, len(args)); err != nil {
		return fmt.Errorf("cuda:%d: launching %s grid %v block %v smem %d: %w", d.ordinal, fn, grid, block, smem, err)
	}
	if d.sync {
		if err := drv.streamSynchronize(d.st); err != nil {
			return fmt.Errorf("cuda:%d: after %s (HSDB_CUDA_SYNC=1): %w", d.ordinal, fn, err)
		}
	}
	return nil
}
