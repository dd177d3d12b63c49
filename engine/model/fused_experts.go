package model

import (
	"strconv"
	"strings"

	"hsdb/engine/tensor"
)

// transformers 5 may save a DeepSeek-architecture checkpoint's routed
// experts fused: "<p>.experts.gate_up_proj" [experts, 2·I, hidden] (each
// expert's gate rows, then its up rows) and "<p>.experts.down_proj"
// [experts, hidden, I], instead of DeepSeek's per-expert
// "<p>.experts.<e>.<gate|up|down>_proj.weight". The loader (engine/arch)
// slices those; the memory plan (engine/plan) reads their headers: both
// name an expert's part the same way here.

// FusedExpertName splits a per-expert weight name "<p>.experts.<e>.<part>_proj.weight"
// into the fused tensor transformers 5 keeps it in ("<p>.experts.gate_up_proj"
// for part gate and up, "<p>.experts.down_proj" for down), the expert e
// (≥ 0) and the part ("gate", "up" or "down"); ok is false for any other
// name.
func FusedExpertName(name string) (fused string, expert int, part string, ok bool) {
	i := strings.LastIndex(name, ".experts.")
	if i < 0 || !strings.HasSuffix(name, "_proj.weight") {
		return "", 0, "", false
	}
	idx, proj, found := strings.Cut(strings.TrimSuffix(name[i+len(".experts."):], "_proj.weight"), ".")
	e, err := strconv.Atoi(idx)
	if !found || err != nil || e < 0 {
		return "", 0, "", false
	}
	base := name[:i] + ".experts."
	switch proj {
	case "gate", "up":
		return base + "gate_up_proj", e, proj, true
	case "down":
		return base + "down_proj", e, proj, true
	}
	return "", 0, "", false
}

// FusedExpertHeaders is a WeightSource whose Meta also answers for a
// per-expert weight the source holds only inside its fused tensor
// (FusedExpertName): gate and up as [I, hidden] (half of gate_up_proj's
// 2·I rows each), down as [hidden, I]; absent when the fused tensor is not
// 3-D or has no expert e. Tensor and the rest come from the source.
type FusedExpertHeaders struct{ WeightSource }

// Meta returns the tensor's header, or a per-expert weight's dtype and
// shape from its fused tensor.
func (f FusedExpertHeaders) Meta(name string) (tensor.DType, []int, bool) {
	if dt, s, ok := f.WeightSource.Meta(name); ok {
		return dt, s, ok
	}
	fused, e, part, ok := FusedExpertName(name)
	if !ok {
		return tensor.Invalid, nil, false
	}
	dt, s, ok := f.WeightSource.Meta(fused)
	if !ok || len(s) != 3 || e >= s[0] {
		return tensor.Invalid, nil, false
	}
	if part == "down" {
		return dt, []int{s[1], s[2]}, true
	}
	return dt, []int{s[1] / 2, s[2]}, true
}

// Names lists the source's own names (when it can list them): the fused
// tensors, not the per-expert names Meta answers for.
func (f FusedExpertHeaders) Names() []string {
	if l, ok := f.WeightSource.(interface{ Names() []string }); ok {
		return l.Names()
	}
	return nil
}
