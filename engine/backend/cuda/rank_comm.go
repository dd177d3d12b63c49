//go:build cuda

package cuda

import (
	"fmt"
	"os"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/tensor"
)

// Comm is one rank's collectives (backend.Comm) in one of two flavours:
//
//   - NCCL, one rank per GPU (rank r on GPU r): ncclAllReduce and
//     ncclAllGather on the rank's stream, with NVLink SHARP multicast off
//     (NCCL_NVLS_ENABLE=0).
//   - In-process, for virtual ranks sharing one GPU: the ranks meet in a
//     backend.Group (as the CPU backend's comm does) and the last to
//     arrive queues the sum or the concatenation with device copies and
//     the add kernel, in rank order (((t0 + t1) + t2) + ...), so results
//     are deterministic and, in f32, equal to the CPU backend's.
//
// Every rank of the group must call the same collectives in the same
// order. A collective of a world of 1 returns its input.
type Comm struct {
	dev   *Device
	rank  int
	world int
	nccl  *driver.NCCLComm // NCCL flavour
	group *backend.Group   // in-process flavour
	devs  []*Device        // in-process: every rank's device
}

var _ backend.Comm = (*Comm)(nil)

// Rank returns this rank's index in [0, Size()).
func (c *Comm) Rank() int { return c.rank }

// Size returns the world size.
func (c *Comm) Size() int { return c.world }

// Close destroys the NCCL communicator (nothing for in-process comms).
func (c *Comm) Close() error {
	if c.nccl == nil {
		return nil
	}
	return c.nccl.Close()
}

// gather returns every rank's tensor of the in-process group; it runs in
// the combine of the group's exchange and panics with a DeviceError (which
// aborts the group) when the ranks' tensors disagree in dtype or rows.
func (c *Comm) gather(op string, vals []any, sameCols bool) []*Tensor {
	ts := make([]*Tensor, len(vals))
	for r, v := range vals {
		ts[r] = v.(*Tensor)
		if ts[r].dt != ts[0].dt || ts[r].rows() != ts[0].rows() || (sameCols && ts[r].numel() != ts[0].numel()) {
			c.dev.badArg(op, "rank %d has %v %s, rank 0 %v %s", r, ts[r].shape, ts[r].dt, ts[0].shape, ts[0].dt)
		}
	}
	return ts
}

// AllReduceSum returns, on every rank, a new tensor holding the sum of t
// over the ranks; t is unchanged.
func (c *Comm) AllReduceSum(t backend.Tensor) backend.Tensor {
	const op = "all_reduce"
	x := c.dev.get(op, t)
	if c.world == 1 {
		return t
	}
	c.dev.float(op, x)
	if c.nccl != nil {
		var y *Tensor
		c.dev.do(op, func() error {
			var err error
			if y, err = c.dev.output(x.dt, x.shape...); err != nil || x.numel() == 0 {
				return err
			}
			return c.nccl.AllReduceSum(x.ptr(), y.ptr(), x.numel(), x.dt)
		})
		return y
	}
	res := c.group.Exchange(c.rank, x, func(vals []any) any {
		ts := c.gather(op, vals, true)
		outs := make([]*Tensor, len(ts))
		c.dev.do(op, func() error {
			for r, d := range c.devs {
				var err error
				if outs[r], err = d.output(x.dt, ts[r].shape...); err != nil {
					return err
				}
			}
			n := int64(x.numel())
			if n == 0 {
				return nil
			}
			if err := c.dev.g.Add(outs[0].ptr(), ts[0].ptr(), ts[1].ptr(), n, x.dt); err != nil {
				return err
			}
			for r := 2; r < len(ts); r++ {
				if err := c.dev.g.Add(outs[0].ptr(), outs[0].ptr(), ts[r].ptr(), n, x.dt); err != nil {
					return err
				}
			}
			return c.copyToOthers(outs)
		})
		return outs
	})
	return res.([]*Tensor)[c.rank]
}

// AllGatherCols returns [rows, sum of cols] on every rank: the ranks' t
// [rows, cols_r] side by side in rank order (vLLM's
// tensor_model_parallel_all_gather on the last dim). Under NCCL every
// rank's t must have the same shape (vLLM pads the vocabulary so that the
// logits shards do).
func (c *Comm) AllGatherCols(t backend.Tensor) backend.Tensor {
	const op = "all_gather"
	x := c.dev.get(op, t)
	if c.world == 1 {
		return t
	}
	es := int64(x.dt.Size())
	rows := x.rows()
	if c.nccl != nil {
		cols := int64(x.cols())
		var y *Tensor
		c.dev.do(op, func() error {
			var err error
			if y, err = c.dev.output(x.dt, rows, c.world*x.cols()); err != nil || x.numel() == 0 {
				return err
			}
			if rows == 1 {
				return c.nccl.AllGather(x.ptr(), y.ptr(), x.numel(), x.dt)
			}
			tmp, err := c.dev.mem.alloc(y.st.bytes, driver.Activations)
			if err != nil {
				return err
			}
			defer c.dev.mem.free([]block{{tmp, driver.Activations}})
			if err := c.nccl.AllGather(x.ptr(), tmp, x.numel(), x.dt); err != nil {
				return err
			}
			// tmp is [world, rows, cols]; y is [rows, world*cols].
			for r := range c.world {
				src := tmp.Add(int64(r) * int64(rows) * cols * es)
				if err := c.dev.g.Copy2D(y.ptr().Add(int64(r)*cols*es), int64(c.world)*cols*es, src, cols*es, rows, cols*es); err != nil {
					return err
				}
			}
			return nil
		})
		return y
	}
	res := c.group.Exchange(c.rank, x, func(vals []any) any {
		ts := c.gather(op, vals, false)
		total := 0
		for _, t := range ts {
			total += t.cols()
		}
		outs := make([]*Tensor, len(ts))
		c.dev.do(op, func() error {
			for r, d := range c.devs {
				var err error
				if outs[r], err = d.output(x.dt, rows, total); err != nil {
					return err
				}
			}
			off := int64(0)
			for _, t := range ts {
				w := int64(t.cols()) * es
				if err := c.dev.g.Copy2D(outs[0].ptr().Add(off), int64(total)*es, t.ptr(), w, rows, w); err != nil {
					return err
				}
				off += w
			}
			return c.copyToOthers(outs)
		})
		return outs
	})
	return res.([]*Tensor)[c.rank]
}

// copyToOthers copies outs[0], the result the exchange computed into rank
// 0's output, over every other rank's output (same shape and dtype): the
// last step of the in-process collectives, which compute once for the
// group.
func (c *Comm) copyToOthers(outs []*Tensor) error {
	for r := 1; r < len(outs); r++ {
		if err := c.dev.g.CopyDevice(outs[r].ptr(), outs[0].ptr(), outs[0].st.bytes); err != nil {
			return err
		}
	}
	return nil
}

// placement says where NewRanks puts the ranks.
type placement int

const (
	// oneRankPerGPU: rank r on GPU r, NCCL collectives.
	oneRankPerGPU placement = iota
	// virtualRanks: every rank on GPU 0, in-process collectives.
	virtualRanks
)

// plan decides where world ranks go given count visible GPUs: one per GPU
// under NCCL when they fit, all on GPU 0 when there is one GPU (or
// HSDB_CUDA_VIRTUAL=1 asks for it). More ranks than GPUs on a machine with
// several is refused: NCCL cannot put two ranks of one communicator on the
// same GPU.
func plan(world, count int, forceVirtual bool) (placement, error) {
	switch {
	case world < 1:
		return 0, fmt.Errorf("%w: world size %d", driver.ErrBadArgument, world)
	case world == 1 || count == 1 || forceVirtual:
		return virtualRanks, nil
	case world <= count:
		return oneRankPerGPU, nil
	}
	return 0, fmt.Errorf("%w: --tp %d on %d GPUs: NCCL needs one GPU per rank; use --tp %d or less, or run all %d ranks on one GPU (CUDA_VISIBLE_DEVICES=0 or HSDB_CUDA_VIRTUAL=1)",
		driver.ErrBadArgument, world, count, count, world)
}

// NewRanks returns the devices and communicators of a tensor-parallel group
// of world ranks computing in act (f32, bf16 or f16), and for virtual
// ranks the backend.Group their collectives meet in (the forward driver
// resets and aborts it with the step; nil under NCCL). GPUs are the shared
// ones (SharedGPU). Errors: ErrNoDriver or ErrNoDevice when there is no
// usable GPU, ErrBadArgument for a dtype or placement that cannot be,
// ErrNoNCCL or an *NCCLError when the communicators cannot be made.
func NewRanks(world int, act tensor.DType) ([]*Device, []*Comm, *backend.Group, error) {
	if act != tensor.F32 && act != tensor.BF16 && act != tensor.F16 {
		return nil, nil, nil, fmt.Errorf("%w: activation dtype %s (want f32, bf16 or f16)", driver.ErrBadArgument, act)
	}
	count, err := driver.DeviceCount()
	if err != nil {
		return nil, nil, nil, err
	}
	place, err := plan(world, count, os.Getenv("HSDB_CUDA_VIRTUAL") == "1")
	if err != nil {
		return nil, nil, nil, err
	}
	devs := make([]*Device, world)
	comms := make([]*Comm, world)
	if place == virtualRanks {
		g, err := sharedGPU(0)
		if err != nil {
			return nil, nil, nil, err
		}
		group := backend.NewGroup(world)
		for r := range world {
			name := fmt.Sprintf("cuda:%d", g.Ordinal())
			if world > 1 {
				name = fmt.Sprintf("cuda:%d/rank%d", g.Ordinal(), r)
			}
			devs[r] = newDevice(g, gpuMemory{g}, name, r, act)
		}
		for r := range world {
			comms[r] = &Comm{dev: devs[r], rank: r, world: world, group: group, devs: devs}
		}
		return devs, comms, group, nil
	}
	gpus := make([]*driver.GPU, world)
	for r := range world {
		g, err := sharedGPU(r)
		if err != nil {
			return nil, nil, nil, err
		}
		gpus[r] = g.GPU
		devs[r] = newDevice(g, gpuMemory{g}, fmt.Sprintf("cuda:%d", r), r, act)
	}
	nc, err := driver.InitComms(gpus)
	if err != nil {
		return nil, nil, nil, err
	}
	for r := range world {
		comms[r] = &Comm{dev: devs[r], rank: r, world: world, nccl: nc[r]}
	}
	return devs, comms, nil, nil
}

// NewWorkerDevice returns the device of one rank worker process
// (engine/worker, a process per rank) on GPU ordinal, named name (as
// messages name it: "cuda:1"), computing in act (f32, bf16 or f16). Its
// collectives are the worker's, not this package's. Errors: as NewRanks'.
func NewWorkerDevice(ordinal int, name string, rank int, act tensor.DType) (*Device, error) {
	if act != tensor.F32 && act != tensor.BF16 && act != tensor.F16 {
		return nil, fmt.Errorf("%w: activation dtype %s (want f32, bf16 or f16)", driver.ErrBadArgument, act)
	}
	count, err := driver.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= count {
		return nil, fmt.Errorf("%w: GPU %d of %d", driver.ErrBadArgument, ordinal, count)
	}
	g, err := sharedGPU(ordinal)
	if err != nil {
		return nil, err
	}
	return newDevice(g, gpuMemory{g}, name, rank, act), nil
}
