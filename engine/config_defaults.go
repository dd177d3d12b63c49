package engine

import (
	"errors"

	"hsdb/engine/model"
)

// configDefaults is what an architecture's parsed config (engine/arch's
// LlamaConfig, DeepseekConfig) tells of the config.json fields it filled
// with its HF config class's defaults because the file left them out, as
// transformers' from_pretrained fills them (LlamaConfig's are Llama-2-7B's
// sizes, DeepseekV3Config's DeepSeek-V3's): Notes words each default that
// sizes weights ("hidden_size 4096 is LlamaConfig's default (config.json
// has none)"); CheckDefaults returns an error wrapping model.ErrWeight
// when a checkpoint tensor's header disagrees with such a default,
// naming the field, its default and the tensor (the shape check alone
// would blame a number the file does not hold); Hint adds the defaults
// applied to an error found later (a tensor missing or of another shape
// that no single default explains).
type configDefaults interface {
	Notes() []string
	CheckDefaults(t *model.Tree, src model.WeightSource) error
	Hint(err error) error
}

// checkDefaults runs cfg's CheckDefaults against the headers of src (nil:
// config.json alone, nothing to check) before the plan's and the loader's
// shape checks, so that a mismatch a default explains is named as one.
func checkDefaults(cfg model.Config, t *model.Tree, src model.WeightSource) error {
	d, ok := cfg.(configDefaults)
	if !ok || src == nil {
		return nil
	}
	return d.CheckDefaults(t, src)
}

// defaultNotes returns cfg's notes of the size defaults it applied (none
// for a config that names every size).
func defaultNotes(cfg model.Config) []string {
	if d, ok := cfg.(configDefaults); ok {
		return d.Notes()
	}
	return nil
}

// hintDefaults is cfg's Hint of a weight error err (model.ErrWeight: the
// plan's header checks, the loader's): the fields config.json left to
// its class's defaults, which may be why; err as it is otherwise.
func hintDefaults(cfg model.Config, err error) error {
	d, ok := cfg.(configDefaults)
	if !ok || !errors.Is(err, model.ErrWeight) {
		return err
	}
	return d.Hint(err)
}
