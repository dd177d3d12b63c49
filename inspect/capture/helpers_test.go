package capture

import (
	"hsdb/engine"
	"hsdb/engine/model"
)

// targetOf wraps an engine as cmd/hsdb does.
func targetOf(e *engine.Engine) *Target {
	return &Target{Dims: e.Dims, Tree: e.Tree, Info: infoOf(e),
		Prefill: func(s [][]int32, h model.Hook) error { _, err := e.Prefill(s, h, false); return err }}
}

func infoOf(e *engine.Engine) ModelInfo {
	return ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
}
