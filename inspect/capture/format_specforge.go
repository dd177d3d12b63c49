package capture

import "fmt"

// SpecForgeAux is how many aux layers sgl-project/SpecForge's EAGLE-3
// trains on: aux_hidden_state is [1, len, 3·hidden]. Its draft's fc is
// Linear(3·target_hidden_size, hidden) and project_hidden_states asserts
// hidden_states.size(-1) == target_hidden_size * 3
// (specforge/modeling/draft/llama3_eagle.py); its training config
// refuses model.aux_hidden_state_layer_ids that are not "exactly three
// distinct non-negative layer ids" (specforge/application/planning.py,
// _validate_algorithm_capabilities), and its capture checks the aux width
// against len(aux_hidden_state_layer_ids)·target_hidden_size
// (specforge/inference/capture.py, _verify_capture_shapes). A sample of
// any other count cannot be trained on, so hsdb writes none (and check
// fails one, inspect/check's interpretSpecForge).
const SpecForgeAux = 3

// SpecForgeAuxCount refuses SpecForge ids (SGLang ids = hsdb layers, in
// file order) that are not SpecForgeAux layers, before anything is
// written: the error (ErrFormat) names the ids given, the width they would
// make, what SpecForge reads, EAGLE-3's ids for L decoder layers where the
// model has them, and how the caller takes ids (how: "--layers with ...",
// "`capture clear`, then ...").
func SpecForgeAuxCount(ids []int, L int, how string) error {
	if len(ids) == SpecForgeAux {
		return nil
	}
	e3 := ""
	if e, clash, _ := Eagle3Shallow(FormatSpecForge, L); clash == "" {
		e3 = fmt.Sprintf(" (EAGLE-3's for %d decoder layers: %s)", L, joinInts(e))
	}
	return fmt.Errorf("%w: specforge ids %s (hsdb layers %s): %d aux layers would make aux_hidden_state [1, len, %d·hidden], which SpecForge cannot train on: it reads exactly %d ([1, len, %d·hidden]; its Eagle-3 draft's fc takes 3·target_hidden_size and its config takes exactly three aux_hidden_state_layer_ids); give %s%s",
		ErrFormat, joinInts(ids), joinInts(ids), len(ids), len(ids), SpecForgeAux, SpecForgeAux, how, e3)
}
