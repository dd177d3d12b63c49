package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/quant"
	"hsdb/engine/regfile"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// stSource adapts a safetensors file or set to model.WeightSource, handing
// out row blocks as views so that a rank's column-parallel shard touches
// only its own pages.
type stSource struct{ safetensors.Source }

// MetaErr says why Meta found no tensor when the reason is not simply its
// absence: a shard that failed to open (a broken index, a corrupt file),
// named with the file. It returns nil for a tensor that is just not there.
func (s stSource) MetaErr(name string) error {
	_, err := s.Lookup(name)
	if errors.Is(err, safetensors.ErrNoTensor) {
		return nil
	}
	return err
}

// ShardErr returns the first shard of a sharded checkpoint that failed to
// open while the load looked tensors up (safetensors.Set.ShardErr); nil for
// a single file or when every shard consulted opened.
func (s stSource) ShardErr() error {
	if se, ok := s.Source.(interface{ ShardErr() error }); ok {
		return se.ShardErr()
	}
	return nil
}

// sourceErr returns src's ShardErr when it has one: the real cause of a
// load that found a tensor "missing", and an error of its own when the load
// took a tensor in that shard for absent and went on without it.
func sourceErr(src model.WeightSource) error {
	if se, ok := src.(interface{ ShardErr() error }); ok {
		return se.ShardErr()
	}
	return nil
}

func (s stSource) Meta(name string) (tensor.DType, []int, bool) {
	ti, ok := s.Info(name)
	if !ok {
		return tensor.Invalid, nil, false
	}
	return ti.DType, ti.Shape, true
}

// LoadDir loads an HF model directory: config.json and model.safetensors, a
// sharded model.safetensors.index.json, or several *.safetensors. The load
// reads each rank's shard from the files' memory mappings (touching only
// its pages); once loaded, the engine holds no tensor that aliases them
// (the CUDA backend copies to the GPU, the CPU backend is given copies:
// model.Loader.Detach) and unmaps every file, so a checkpoint rewritten or
// cut short during the session neither changes the weights nor kills the
// process with SIGBUS. A file cut short during the load is an error naming
// it (safetensors.ErrChanged).
func LoadDir(dir string, opts Options) (*Engine, error) {
	cfg, err := regfile.ReadFile(filepath.Join(dir, "config.json"), modelpath.MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w (an HF model directory needs config.json)", dir, err)
	}
	if _, _, err := model.ParseConfig(cfg); err != nil { // before touching the weights
		return nil, fmt.Errorf("--model %s: %w", dir, explainDirLimit(err, dir, cfg))
	}
	if _, err := quant.FromConfig(cfg); err != nil {
		return nil, fmt.Errorf("--model %s: %w", dir, err)
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", dir, err)
	}
	e, err := LoadSource(dir, cfg, stSource{set}, opts)
	if err != nil {
		set.Close()
		return nil, err
	}
	e.weights = set // for BytesRead, which a closed set keeps
	if err := set.Close(); err != nil {
		e.Close()
		return nil, fmt.Errorf("--model %s: %w", dir, err)
	}
	return e, nil
}

// BytesRead returns the checkpoint bytes the load handed out (tensors and
// row blocks read from the mapping), or 0 for in-memory models.
func (e *Engine) BytesRead() int64 {
	if e.weights == nil {
		return 0
	}
	return e.weights.BytesRead()
}

// Close releases the engine's devices (GPU memory, communicators); the
// engine must not be used afterwards.
func (e *Engine) Close() error {
	var first error
	for _, c := range e.closers {
		if err := c(); err != nil && first == nil {
			first = err
		}
	}
	e.closers = nil
	return first
}
