package engine

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/hostmem"
	"hsdb/engine/model"
	"hsdb/engine/plan"
)

// ErrMemory is returned by a load whose plan does not fit in the memory
// available to the ranks; the message names the rank and the shortfall.
// It is plan.ErrMemory.
var ErrMemory = plan.ErrMemory

// availableMemory returns the bytes the ranks of opts.Device can hold
// weights in: opts.MemoryLimit when set, else for the CPU backend (whose
// virtual ranks share the host) MemAvailable from /proc/meminfo. ok is false
// when it cannot tell (no /proc, or a CUDA device, whose free memory the
// backend does not report yet).
func availableMemory(opts Options) (bytes int64, ok bool) {
	if opts.MemoryLimit > 0 {
		return opts.MemoryLimit, true
	}
	if !onCPU(opts) {
		return 0, false
	}
	return hostmem.Available()
}

// onCPU reports whether opts loads on the CPU backend.
func onCPU(opts Options) bool { return opts.Device == "" || opts.Device == "cpu" }

// loadPlan is the memory plan LoadSource checks before reading any weight:
// the weights as the backend keeps them (qs: the checkpoint's quantization
// scheme, or nil) (the CPU backend dequantizes
// quantized weights on load; a GPU keeps them as stored), no tokens (the
// KV cache grows with the input later), against what availableMemory
// reports (all ranks together on the CPU, whose virtual ranks share the
// host; per rank on a GPU). Without a known limit on GPUs, LoadSource
// checks the same plan against the GPUs' free memory (checkDevices).
func loadPlan(cfg model.Config, t *model.Tree, world int, src model.WeightSource, qs model.QuantScheme, opts Options) (*plan.Plan, error) {
	avail, _ := availableMemory(opts)
	var stage *model.StageEnds
	if w := opts.Worker; w != nil && w.Pipe != nil { // a pipeline stage holds its ends only where vLLM places them
		stage = &model.StageEnds{First: w.Pipe.First(), Last: w.Pipe.Last()}
	}
	return plan.New(t, cfg.Dims(), plan.Options{World: world, DType: opts.DType, Src: src, Quant: qs,
		Dequantize: onCPU(opts), DeviceBytes: avail, Shared: onCPU(opts), Act: plan.ActivationDType(opts.DType, cfg.Dims()), Stage: stage, W8A8: opts.W8A8})
}

// memInfoer is implemented by a device that reports its GPU's memory
// (the CUDA backend): the GPU's name, shared by the ranks placed on it,
// and its free and total bytes.
type memInfoer interface {
	MemInfo() (name string, free, total int64, err error)
}

// checkDevices checks the plan against the free memory of the GPUs the
// ranks were placed on (plan.CheckDevices; several ranks on one GPU share
// it). Devices that do not report their memory (the CPU backend) are not
// checked; a device that fails to report is an error naming its rank.
func checkDevices(p *plan.Plan, devs []backend.Device) error {
	var gpus []plan.DeviceMemory
	index := map[string]int{}
	for r, d := range devs {
		mi, ok := d.(memInfoer)
		if !ok {
			continue
		}
		name, free, _, err := mi.MemInfo()
		if err != nil {
			return fmt.Errorf("rank %d: device memory: %w", r, err)
		}
		i, seen := index[name]
		if !seen {
			i = len(gpus)
			index[name] = i
			gpus = append(gpus, plan.DeviceMemory{Name: name, Free: free})
		}
		gpus[i].Ranks = append(gpus[i].Ranks, r)
	}
	return p.CheckDevices(gpus)
}
