package engine

import (
	"fmt"

	"hsdb/engine/safetensors"
	"hsdb/engine/stories"
)

// LoadDefault loads the embedded stories260K (engine/stories) — the model
// hsdb uses when no --model is given.
func LoadDefault(opts Options) (*Engine, error) {
	cfg, err := stories.Files.ReadFile("model/config.json")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DefaultModelPath, err)
	}
	st, err := stories.Files.ReadFile("model/model.safetensors")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DefaultModelPath, err)
	}
	f, err := safetensors.FromBytes(DefaultModelPath+"/model.safetensors", st)
	if err != nil {
		return nil, err
	}
	return LoadSource(DefaultModelPath, cfg, stSource{f}, opts)
}
