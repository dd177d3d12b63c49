package capture

import (
	"maps"
	"math"
	"slices"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Faults on what is recorded (`inject`): the forward pass is untouched and
// the Capturer writes a wrong tensor, as a broken capture pipeline does.
// Each applies to layer captures (hidden_states.{layer}) at the fault's
// site ("" every layer).
const (
	// FaultNoResidual records vLLM's hidden_states half (the MLP output)
	// instead of hidden_states + residual.
	FaultNoResidual = "no-residual"
	// FaultScaleResidual records the layer's output scaled by Value (the
	// debugger defaults it to 1/routed_scaling_factor, else 0.5).
	FaultScaleResidual = "scale-residual"
	// FaultShiftRows records each sequence's rows shifted by Value tokens
	// (row i holds token i+k; the last rows repeat the last token).
	FaultShiftRows = "shift-rows"
	// FaultNaNAt records a NaN at token Token, channel Channel of each
	// sequence.
	FaultNaNAt = "nan-at"
	// FaultKeepShard records rank Rank's column shard of each layer output
	// ([len, hidden/world]) instead of the full tensor: a hook that saves
	// what its own rank holds.
	FaultKeepShard = "keep-shard"
	// FaultGatherRows records the world's column shards concatenated along
	// rows ([world·len, hidden/world]): an all-gather on the wrong
	// dimension (torch.cat(..., dim=0)).
	FaultGatherRows = "gather-rows"
)

// IsRecordFault reports whether kind is a fault the Capturer applies.
func IsRecordFault(kind string) bool {
	switch kind {
	case FaultNoResidual, FaultScaleResidual, FaultShiftRows, FaultNaNAt, FaultKeepShard, FaultGatherRows:
		return true
	}
	return false
}

// SetFaults sets the faults injected from the next step on (nil clears
// them), as the engine takes its computation faults when a step starts
// (model.Pass.Faults): the recording faults (IsRecordFault) are applied
// to what is recorded; every fault is noted as one the recorded data was
// made under (Under), for the dump's manifest. during is the step stopped
// when they are set (the batch of the step in progress; nil when no pass
// is stopped): the faults take effect at the first site the capturer
// visits in any other step. Before, faults set at a stop were applied at
// once, so a pass stopped at layer 1 recorded its later layers under
// faults its earlier layers, and its computation, never saw; and keyed on
// the capturer's last visited step alone, a stop before the first
// captured site (break layers.1, capture layers 3) took them in the
// stopped step still.
func (c *Capturer) SetFaults(fs model.Faults, during *model.Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := &stepFaults{during: during}
	for _, f := range fs {
		next.active = append(next.active, f.String())
		if IsRecordFault(f.Kind) {
			next.faults = append(next.faults, f)
		}
	}
	c.next = next
}

// stepFaults are the faults of a step: the recording ones, and every one
// as text; during is the step stopped when they were set, which they do
// not apply to.
type stepFaults struct {
	faults model.Faults
	active []string
	during *model.Batch
}

// takeFaults makes the faults SetFaults gave the current step's when b is
// a step after the one stopped when they were set (called with c.mu held
// at every visit).
func (c *Capturer) takeFaults(b *model.Batch) {
	if c.next != nil && (c.next.during == nil || c.next.during != b) {
		c.faults, c.active, c.next = c.next.faults, c.next.active, nil
	}
}

// Under returns the injected faults (Fault.String) active in any pass
// whose data the capturer holds, sorted; nil when none.
func (c *Capturer) Under() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.under) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(c.under))
}

// noteFaults marks the recorded data as made under the active faults.
func (c *Capturer) noteFaults() {
	for _, f := range c.active {
		if c.under == nil {
			c.under = map[string]bool{}
		}
		c.under[f] = true
	}
}

// faultTensor is the tensor a layer capture records under the faults:
// hidden_states for FaultNoResidual, else the spec's own.
func (c *Capturer) faultTensor(spec CaptureSpec) string {
	if spec.Layer < 0 || spec.Tensor != WhatStream {
		return spec.Tensor
	}
	if _, ok := c.find(FaultNoResidual, spec.Site); ok {
		return WhatHidden
	}
	return spec.Tensor
}

// applyFaults returns one sequence's recorded rows x [n, width] (the
// visit's own host copy, changed in place) as the faults at spec's site
// say, for a pass over world ranks. first is the sequence position of x's
// first row (0 in a prefill, the rows recorded before in a decode step):
// nan-at's token is a position in the sequence, so a decode step's one row
// is not its token 0 (nan-at --token 0 put a NaN in every generated row).
func (c *Capturer) applyFaults(spec CaptureSpec, x *tensor.Tensor, world, first int) *tensor.Tensor {
	if spec.Layer < 0 || len(c.faults) == 0 || x.DType != tensor.F32 {
		return x
	}
	v := x.F32()
	n, w := x.Rows(), x.Cols()
	if f, ok := c.find(FaultScaleResidual, spec.Site); ok {
		for i := range v {
			v[i] *= float32(f.Value)
		}
	}
	if f, ok := c.find(FaultShiftRows, spec.Site); ok && n > 1 {
		k := int(f.Value)
		src := append([]float32(nil), v...)
		for r := range n {
			from := min(max(r+k, 0), n-1)
			copy(v[r*w:(r+1)*w], src[from*w:(from+1)*w])
		}
	}
	if f, ok := c.find(FaultNaNAt, spec.Site); ok && f.Token >= first && f.Token < first+n && f.Channel < w {
		v[(f.Token-first)*w+f.Channel] = float32(math.NaN())
	}
	if world < 2 || w%world != 0 {
		return x
	}
	sw := w / world
	if f, ok := c.find(FaultKeepShard, spec.Site); ok {
		r := max(f.Rank, 0) % world
		out := tensor.New(tensor.F32, n, sw)
		o := out.F32()
		for i := range n {
			copy(o[i*sw:(i+1)*sw], v[i*w+r*sw:i*w+(r+1)*sw])
		}
		return out
	}
	if _, ok := c.find(FaultGatherRows, spec.Site); ok {
		out := tensor.New(tensor.F32, world*n, sw)
		o := out.F32()
		for r := range world {
			for i := range n {
				copy(o[(r*n+i)*sw:(r*n+i+1)*sw], v[i*w+r*sw:i*w+(r+1)*sw])
			}
		}
		return out
	}
	return x
}

// find returns the recording fault of kind at site; a recording fault's
// Rank is not a filter (keep-shard's is the rank whose shard is kept).
func (c *Capturer) find(kind, site string) (model.Fault, bool) {
	for _, f := range c.faults {
		if f.Kind == kind {
			f2 := f
			f2.Rank = -1
			if _, ok := (model.Faults{f2}).Find(kind, site, 0); ok {
				return f, true
			}
		}
	}
	return model.Fault{}, false
}
