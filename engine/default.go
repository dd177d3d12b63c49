package engine

import (
	"fmt"

	"hsdb/engine/safetensors"
	"hsdb/engine/stories"
)

// LoadDefault loads the embedded stories260K (engine/stories) — the model
// hsdb uses when no --model is given — as LoadSource does with opts.
// Errors name DefaultModelPath: an embedded file that cannot be read or
// validated (safetensors.FromBytes), or LoadSource's (the split over
// opts.TP, the device).
func LoadDefault(opts Options) (*Engine, error) {
	cfg, src, err := defaultModel()
	if err != nil {
		return nil, err
	}
	return LoadSource(DefaultModelPath, cfg, src, opts)
}

// defaultModel returns the embedded stories260K's config.json and its
// weights (engine/stories), as LoadDefault and PlanModel read them.
func defaultModel() ([]byte, stSource, error) {
	cfg, err := stories.Files.ReadFile("model/config.json")
	if err != nil {
		return nil, stSource{}, fmt.Errorf("%s: %w", DefaultModelPath, err)
	}
	st, err := stories.Files.ReadFile("model/model.safetensors")
	if err != nil {
		return nil, stSource{}, fmt.Errorf("%s: %w", DefaultModelPath, err)
	}
	f, err := safetensors.FromBytes(DefaultModelPath+"/model.safetensors", st)
	if err != nil {
		return nil, stSource{}, err
	}
	return cfg, stSource{f}, nil
}
