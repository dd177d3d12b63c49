package check

import (
	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/inspect/capture"
)

// targetOf wraps an engine as cmd/hsdb does.
func targetOf(e *engine.Engine) *capture.Target {
	info := capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
	return &capture.Target{Dims: e.Dims, Tree: e.Tree, Info: info,
		Prefill: func(s [][]int32, h model.Hook) error { _, err := e.Prefill(s, h, false); return err }}
}
