//go:build cuda

package driver

/*
#include <stdlib.h>
#include "shim_nccl.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"hsdb/engine/tensor"
)

var (
	ncclOnce sync.Once
	ncclErr  error
	ncclVer  int
)

// ncclCandidates lists where loadNCCL looks: HSDB_NCCL alone when set,
// else libnccl.so.2 on the loader path, in /usr/local/cuda/lib64, and in
// Debian/Ubuntu's multiarch directory.
func ncclCandidates() []string {
	if s := os.Getenv("HSDB_NCCL"); s != "" {
		return []string{s}
	}
	return []string{"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}
}

// loadNCCL opens NCCL once per process, after setting NCCL_NVLS_ENABLE=0:
// NVLink SHARP multicast stays off, as the H200 hosts hsdb targets require.
// It returns an error wrapping ErrNoNCCL listing what was tried.
func loadNCCL() error {
	ncclOnce.Do(func() {
		os.Setenv("NCCL_NVLS_ENABLE", "0")
		var tried []string
		for _, lib := range ncclCandidates() {
			cs := C.CString(lib)
			msg := C.hsdb_nccl_open(cs)
			C.free(unsafe.Pointer(cs))
			if msg != nil {
				tried = append(tried, lib+": "+C.GoString(msg))
				continue
			}
			var v C.int
			if C.hsdb_ncclGetVersion(&v) == 0 {
				ncclVer = int(v)
			}
			return
		}
		ncclErr = fmt.Errorf("%w (set HSDB_NCCL to its path): %s", ErrNoNCCL, strings.Join(tried, "; "))
	})
	return ncclErr
}

// NCCLVersion returns the opened NCCL's version code (major*10000 +
// minor*100 + patch for 2.9 and later: 22703 for 2.27.3).
func NCCLVersion() (int, error) {
	if err := loadNCCL(); err != nil {
		return 0, err
	}
	return ncclVer, nil
}

// NCCLError is a failed NCCL call.
type NCCLError struct {
	Op     string
	Result int
	Msg    string
}

// Error formats "OP: NCCL result N: TEXT".
func (e *NCCLError) Error() string {
	return fmt.Sprintf("%s: NCCL result %d: %s", e.Op, e.Result, e.Msg)
}

func ncclCheck(op string, r C.ncclResult_t) error {
	if r == 0 {
		return nil
	}
	return &NCCLError{Op: op, Result: int(r), Msg: C.GoString(C.hsdb_nccl_error_string(r))}
}

// UniqueID is NCCL's rendezvous token (ncclUniqueId, 128 bytes): rank 0
// creates it and every rank passes the same one to InitComm. Across
// processes it travels as bytes.
type UniqueID [128]byte

// NewUniqueID returns a fresh ncclUniqueId (ncclGetUniqueId). It returns
// ErrNoNCCL or an *NCCLError.
func NewUniqueID() (UniqueID, error) {
	var id UniqueID
	if err := loadNCCL(); err != nil {
		return id, err
	}
	var cid C.ncclUniqueId
	if err := ncclCheck("ncclGetUniqueId", C.hsdb_ncclGetUniqueId(&cid)); err != nil {
		return id, err
	}
	id = *(*UniqueID)(unsafe.Pointer(&cid))
	return id, nil
}

// NCCLComm is one rank's NCCL communicator, bound to its device's thread and
// stream: collectives are queued on the stream like any kernel.
type NCCLComm struct {
	d     *GPU
	c     C.ncclComm_t
	rank  int
	world int
}

// InitComm joins the communicator of world ranks identified by id as rank
// (ncclCommInitRank), on d's thread. It blocks until every rank has joined,
// so all ranks must call it concurrently (InitComms does for one process).
func (d *GPU) InitComm(id UniqueID, rank, world int) (*NCCLComm, error) {
	if rank < 0 || rank >= world {
		return nil, fmt.Errorf("%w: nccl rank %d of world size %d", ErrBadArgument, rank, world)
	}
	if err := loadNCCL(); err != nil {
		return nil, err
	}
	c := &NCCLComm{d: d, rank: rank, world: world}
	err := d.Do(func() error {
		cid := *(*C.ncclUniqueId)(unsafe.Pointer(&id))
		return ncclCheck("ncclCommInitRank", C.hsdb_ncclCommInitRank(&c.c, C.int(world), cid, C.int(rank)))
	})
	if err != nil {
		return nil, fmt.Errorf("cuda:%d: rank %d of %d: %w", d.ordinal, rank, world, err)
	}
	return c, nil
}

// InitComms creates one communicator per device for a single process
// driving all of them, rank i on devs[i]. Each rank's ncclCommInitRank runs
// on its own device thread, all at once: NCCL's one-thread-per-GPU pattern,
// which needs no ncclGroupStart/End (that is for one thread initialising
// several ranks). On failure every communicator created is destroyed and
// the first error (naming its rank) is returned.
func InitComms(devs []*GPU) ([]*NCCLComm, error) {
	id, err := NewUniqueID()
	if err != nil {
		return nil, err
	}
	comms := make([]*NCCLComm, len(devs))
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, d := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[i], errs[i] = d.InitComm(id, i, len(devs))
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			for _, c := range comms {
				if c != nil {
					c.Close()
				}
			}
			return nil, e
		}
	}
	return comms, nil
}

// Rank returns the communicator's rank in [0, World()).
func (c *NCCLComm) Rank() int { return c.rank }

// World returns the communicator's world size (number of ranks).
func (c *NCCLComm) World() int { return c.world }

func ncclType(dt tensor.DType) (C.ncclDataType_t, bool) {
	switch dt {
	case tensor.F32:
		return 7, true
	case tensor.F16:
		return 6, true
	case tensor.BF16:
		return 9, true
	case tensor.F64:
		return 8, true
	case tensor.I32:
		return 2, true
	case tensor.I64:
		return 4, true
	}
	return 0, false
}

// AllReduceSum queues recv[i] = Σ_ranks send[i] for count elements of dt
// (in place when send == recv), the all-reduce that ends a row-parallel
// linear. Every rank must call it with the same count and dtype. NCCL sums
// bf16 in its own order, so results can differ from a serial sum in the
// last bit.
func (c *NCCLComm) AllReduceSum(send, recv Ptr, count int, dt tensor.DType) error {
	t, ok := ncclType(dt)
	if !ok {
		return fmt.Errorf("%w: all-reduce of dtype %s", ErrBadArgument, dt)
	}
	return c.d.Do(func() error {
		if err := ncclCheck("ncclAllReduce", C.hsdb_nccl_all_reduce(C.ulonglong(send), C.ulonglong(recv), C.size_t(count), t, c.c, C.cudaStream_t(unsafe.Pointer(c.d.stream)))); err != nil {
			return fmt.Errorf("cuda:%d: rank %d: %w", c.d.ordinal, c.rank, err)
		}
		return nil
	})
}

// AllGather queues the gather of count elements of dt from every rank
// into recv, rank r's at element offset r*count (recv holds world*count).
func (c *NCCLComm) AllGather(send, recv Ptr, count int, dt tensor.DType) error {
	t, ok := ncclType(dt)
	if !ok {
		return fmt.Errorf("%w: all-gather of dtype %s", ErrBadArgument, dt)
	}
	return c.d.Do(func() error {
		if err := ncclCheck("ncclAllGather", C.hsdb_nccl_all_gather(C.ulonglong(send), C.ulonglong(recv), C.size_t(count), t, c.c, C.cudaStream_t(unsafe.Pointer(c.d.stream)))); err != nil {
			return fmt.Errorf("cuda:%d: rank %d: %w", c.d.ordinal, c.rank, err)
		}
		return nil
	})
}

// AsyncError returns the communicator's asynchronous error
// (ncclCommGetAsyncError: a peer that died, a network failure), nil while
// it is healthy. A collective that never completes shows up here.
func (c *NCCLComm) AsyncError() error {
	return c.d.Do(func() error {
		var r C.ncclResult_t
		if err := ncclCheck("ncclCommGetAsyncError", C.hsdb_ncclCommGetAsyncError(c.c, &r)); err != nil {
			return err
		}
		if err := ncclCheck("nccl async", r); err != nil {
			return fmt.Errorf("cuda:%d: rank %d: %w", c.d.ordinal, c.rank, err)
		}
		return nil
	})
}

// Close destroys the communicator (ncclCommDestroy) after its queued work.
func (c *NCCLComm) Close() error {
	if c == nil || c.c == nil {
		return nil
	}
	return c.d.Do(func() error {
		err := ncclCheck("ncclCommDestroy", C.hsdb_ncclCommDestroy(c.c))
		c.c = nil
		return err
	})
}

// Each runs f(comms[i]) for every rank at once, one goroutine per rank, and
// returns the first error. Collectives of one process's ranks must be
// issued this way (or from per-rank goroutines): a rank's ncclAllReduce may
// wait for the others to reach it, so issuing them one after another from
// one goroutine can deadlock.
func Each(comms []*NCCLComm, f func(c *NCCLComm) error) error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for i, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
