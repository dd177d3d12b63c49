package plan

import (
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// fusedView is the checkpoint's headers as the DeepSeek loader reads them
// (engine/arch fusedExperts): a routed expert's per-expert weight
// "<p>.experts.<e>.<gate|up|down>_proj.weight" that the checkpoint does
// not hold under that name is the expert's part of transformers 5's fused
// "<p>.experts.gate_up_proj" [experts, 2·I, hidden] (gate and up: half its
// rows each) or "<p>.experts.down_proj" [experts, hidden, I]. The plan's
// checks read headers through it, so a fused checkpoint is neither taken
// for one missing its experts nor checked less than the load checks it.
type fusedView struct{ model.WeightSource }

// Meta returns the tensor's header, or a per-expert weight's dtype and
// shape from its fused tensor (absent when that tensor is not 3-D or has
// no expert e, as the loader finds it).
func (f fusedView) Meta(name string) (tensor.DType, []int, bool) {
	if dt, s, ok := f.WeightSource.Meta(name); ok {
		return dt, s, ok
	}
	fused, e, down, ok := fusedExpertName(name)
	if !ok {
		return tensor.Invalid, nil, false
	}
	dt, s, ok := f.WeightSource.Meta(fused)
	if !ok || len(s) != 3 || e >= s[0] {
		return tensor.Invalid, nil, false
	}
	if down {
		return dt, []int{s[1], s[2]}, true
	}
	return dt, []int{s[1] / 2, s[2]}, true
}

// fusedExpertName splits "<p>.experts.<e>.<proj>_proj.weight" into the
// fused tensor that holds it ("<p>.experts.gate_up_proj" for gate and up,
// "<p>.experts.down_proj" for down), the expert e, and whether it is down.
func fusedExpertName(name string) (fused string, e int, down, ok bool) {
	i := strings.LastIndex(name, ".experts.")
	if i < 0 || !strings.HasSuffix(name, "_proj.weight") {
		return "", 0, false, false
	}
	idx, proj, found := strings.Cut(strings.TrimSuffix(name[i+len(".experts."):], "_proj.weight"), ".")
	e, err := strconv.Atoi(idx)
	if !found || err != nil || e < 0 {
		return "", 0, false, false
	}
	base := name[:i] + ".experts."
	switch proj {
	case "gate", "up":
		return base + "gate_up_proj", e, false, true
	case "down":
		return base + "down_proj", e, true, true
	}
	return "", 0, false, false
}
