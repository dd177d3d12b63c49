package arch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"hsdb/engine/model"
)

// checkArchitectures refuses a config whose architectures list names
// classes, none of which hsdb supports, when model.ParseConfig picked
// arch by its model_type instead ({"architectures": ["FooForCausalLM"],
// "model_type": "llama"} loaded as LlamaForCausalLM).
//
// Why refuse rather than accept with a note: hsdb reproduces vLLM's module
// tree, class names and split for the class it runs, and vLLM chooses
// that class by architectures (its model registry), refusing one it does
// not support; only transformers' AutoModelForCausalLM goes by model_type.
// A name hsdb does not know may be another model of the same model_type
// (LlamaForSequenceClassification has a score head, not lm_head; a
// trust_remote_code class may change the layers), so loading it as arch
// would debug a model that is not the one the checkpoint holds. The error
// says how to proceed when the checkpoint is arch after all. An absent or
// empty list still falls back to model_type, as transformers does.
func checkArchitectures(raw map[string]json.RawMessage, arch string) error {
	var names []string
	if v, ok := raw["architectures"]; !ok || json.Unmarshal(v, &names) != nil || len(names) == 0 {
		return nil // absent, null or not a list of strings (the struct decoding names the latter)
	}
	known := model.Architectures()
	for _, n := range names {
		if slices.Contains(known, n) {
			return nil
		}
	}
	var mt string
	_ = json.Unmarshal(raw["model_type"], &mt)
	return fmt.Errorf("config.json: architectures %s names no architecture hsdb supports (it knows %s); model_type %q would mean %s, but the model class is chosen by architectures, as vLLM chooses it: if the checkpoint is a %s, write \"architectures\": [%q]",
		quoteList(names), strings.Join(known, ", "), mt, arch, arch, arch)
}

// quoteList renders names as a JSON array: ["FooForCausalLM"].
func quoteList(names []string) string {
	b, _ := json.Marshal(names)
	return string(b)
}
