package worker

import (
	"fmt"
	"strings"

	"hsdb/engine"
	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// chain is one tensor-parallel rank as the engine sees it: its worker of
// every pipeline stage (one without --pp), driven stage after stage within
// a step. All ranks go through the stages in the same order, so each
// stage's ranks meet at its sites and in its collectives as one group.
type chain struct {
	f    *Front
	rank int
}

var _ engine.RemoteRank = chain{}

func (c chain) stages() []*remoteRank {
	out := make([]*remoteRank, c.f.pp)
	for s := range out {
		out[s] = c.f.slot(s*c.f.world + c.rank)
	}
	return out
}

// Forward runs step b on the rank's workers, stage after stage; the last
// stage returns the logits.
func (c chain) Forward(pass *model.Pass, b *model.Batch, logits bool) (*tensor.Tensor, error) {
	var out *tensor.Tensor
	for s, r := range c.stages() {
		var err error
		out, err = r.forward(pass, b, logits && s == c.f.pp-1)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Device is the rank's device: the worker's stand-in (proxy), or with
// stages one that names every stage's device and sums their memory.
func (c chain) Device() backend.Device {
	st := c.stages()
	if len(st) == 1 {
		return proxy{st[0]}
	}
	return stagesDevice{proxy: proxy{st[0]}, all: st}
}

// CacheBytes returns the KV-cache bytes over the rank's stages.
func (c chain) CacheBytes() int64 {
	var n int64
	for _, r := range c.stages() {
		r.queryMemory()
		n += r.cache
	}
	return n
}

// Report is what the rank's workers read: bytes summed over stages.
func (c chain) Report() model.LoadReport {
	st := c.stages()
	if len(st) == 1 {
		return st[0].report
	}
	var rep model.LoadReport
	for _, r := range st {
		rep.Bytes += r.report.Bytes
		if r.report.Format != "" {
			rep.Format = r.report.Format
		}
		rep.Dequantized = append(rep.Dequantized, r.report.Dequantized...)
		rep.Formats = append(rep.Formats, r.report.Formats...)
	}
	return rep
}

// stagesDevice is a rank's device over several pipeline stages: Name
// lists each stage's device with its layers ("cpu:0 (stage 0: layers
// 0-2) + cpu:2 (stage 1: layers 3-4)"), MemoryInUse sums them. A stop's
// tensors carry their own stage's device.
type stagesDevice struct {
	proxy
	all []*remoteRank
}

func (d stagesDevice) Name() string {
	var parts []string
	for _, r := range d.all {
		parts = append(parts, fmt.Sprintf("%s (stage %d: layers %s)", r.devName, r.stage, r.f.stages[r.stage]))
	}
	return strings.Join(parts, " + ")
}

func (d stagesDevice) MemoryInUse() int64 {
	var n int64
	for _, r := range d.all {
		n += proxy{r}.MemoryInUse()
	}
	return n
}
