//go:build cuda

package driver

/*
#include <stdlib.h>
#include "shim_driver.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"hsdb/kernels"
)

// module is a loaded PTX module (device thread only).
type module struct {
	name string
	h    C.CUmodule
}

// function is a kernel entry point with the largest dynamic shared memory
// it has been allowed so far.
type function struct {
	name    string
	h       C.CUfunction
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
	cs := C.CString(src.PTX)
	defer C.free(unsafe.Pointer(cs))
	var log [8192]C.char
	m := &module{name: name}
	if err := check("cuModuleLoadDataEx", C.hsdb_load_module(&m.h, cs, &log[0], C.size_t(len(log)))); err != nil {
		return nil, fmt.Errorf("cuda:%d: loading kernels/ptx/%s.ptx (source %s): %w\n%s", d.ordinal, name,
			src.SourceSHA256[:12], err, C.GoString(&log[0]))
	}
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
	cs := C.CString(fn)
	defer C.free(unsafe.Pointer(cs))
	f := &function{name: fn, maxSmem: 48 << 10}
	if err := check("cuModuleGetFunction", C.hsdb_cuModuleGetFunction(&f.h, m.h, cs)); err != nil {
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
		if err := check("cuFuncSetAttribute", C.hsdb_cuFuncSetAttribute(f.h, 8, C.int(smem))); err != nil { // MAX_DYNAMIC_SHARED_SIZE_BYTES
			return fmt.Errorf("cuda:%d: %s needs %d bytes of shared memory: %w", d.ordinal, fn, smem, err)
		}
		f.maxSmem = smem
	}
	if len(args) > 32 {
		return fmt.Errorf("cuda: %s: %d kernel arguments, at most 32", fn, len(args))
	}
	var buf [32 * 8]byte
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
	r := C.hsdb_launch(f.h, C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y),
		C.uint(block.Z), C.uint(smem), d.stream, unsafe.Pointer(&buf[0]), C.int(len(args)))
	if err := check("cuLaunchKernel", r); err != nil {
		return fmt.Errorf("cuda:%d: launching %s grid %v block %v smem %d: %w", d.ordinal, fn, grid, block, smem, err)
	}
	if d.sync {
		if err := check("cuStreamSynchronize", C.hsdb_cuStreamSynchronize(d.stream)); err != nil {
			return fmt.Errorf("cuda:%d: after %s (HSDB_CUDA_SYNC=1): %w", d.ordinal, fn, err)
		}
	}
	return nil
}
