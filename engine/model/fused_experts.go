package model

import (
	"fmt"
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

// FusedExpertPart returns the shape of expert e's part ("gate", "up" or
// "down") of a fused tensor of shape fused: gate and up [I, hidden] (the
// halves of gate_up_proj[e]'s 2·I rows), down [hidden, I] (down_proj[e]);
// an error, in the words the loader reports, when the fused tensor is not
// [experts, rows, cols], has no expert e, or (gate, up) an odd row count
// that has no halves.
func FusedExpertPart(fused []int, e int, part string) ([]int, error) {
	if len(fused) != 3 || e < 0 || e >= fused[0] {
		return nil, fmt.Errorf("fused expert tensor of shape %s has no expert %d", tensor.ShapeString(fused), e)
	}
	rows, cols := fused[1], fused[2]
	if part == "down" {
		return []int{rows, cols}, nil
	}
	if rows%2 != 0 {
		// transformers 5 splits gate_up_proj[e] into two equal halves; an
		// odd row count has none.
		return nil, fmt.Errorf("fused expert tensor of shape %s: gate_up_proj needs an even number of rows (gate and up halves of 2·moe_intermediate_size), got %d", tensor.ShapeString(fused), rows)
	}
	return []int{rows / 2, cols}, nil
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
	if !ok {
		return tensor.Invalid, nil, false
	}
	shape, err := FusedExpertPart(s, e, part)
	if err != nil {
		return tensor.Invalid, nil, false
	}
	return dt, shape, true
}

// PartErr returns, for a per-expert weight name the source does not hold
// under that name but whose fused tensor it holds, the loader's error for
// the fused tensor that cannot give it (FusedExpertPart: "weight:
// model.layers.2.mlp.experts.gate_up_proj (for
// model.layers.2.mlp.experts.0.gate_proj.weight): fused expert tensor of
// shape [8, 73, 96]: gate_up_proj needs an even number of rows ..."), so
// that it is named rather than the per-expert tensor reported missing;
// nil otherwise.
func (f FusedExpertHeaders) PartErr(name string) error {
	if _, _, ok := f.WeightSource.Meta(name); ok {
		return nil
	}
	fused, e, part, ok := FusedExpertName(name)
	if !ok {
		return nil
	}
	_, s, ok := f.WeightSource.Meta(fused)
	if !ok {
		return nil
	}
	if _, err := FusedExpertPart(s, e, part); err != nil {
		return fmt.Errorf("%w: %s (for %s): %w", ErrWeight, fused, name, err)
	}
	return nil
}

// Names lists the source's own names (when it can list them): the fused
// tensors, not the per-expert names Meta answers for.
func (f FusedExpertHeaders) Names() []string {
	if l, ok := f.WeightSource.(interface{ Names() []string }); ok {
		return l.Names()
	}
	return nil
}
