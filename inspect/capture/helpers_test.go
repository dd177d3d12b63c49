package capture

import (
	"sync"
	"testing"

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

var (
	llamaOnce sync.Once
	llamaEng  *engine.Engine
	llamaErr  error
)

// llamaEngine loads testdata/hf/llama at --tp 1 once for the tests of this
// package.
func llamaEngine(t *testing.T) *engine.Engine {
	t.Helper()
	llamaOnce.Do(func() { llamaEng, llamaErr = engine.Open("../../testdata/hf/llama", engine.Options{TP: 1}) })
	if llamaErr != nil {
		t.Fatal(llamaErr)
	}
	return llamaEng
}
