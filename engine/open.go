package engine

import "hsdb/engine/modelpath"

// DefaultModelPath is the name the embedded stories260K is reported under
// (modelpath.Embedded).
const DefaultModelPath = modelpath.Embedded

// Open loads a model from path: "" for the embedded stories260K, a
// directory with config.json and safetensors (sharded or not), or a
// llama2.c checkpoint (*.bin); modelpath.Resolve decides which. Errors name
// the path and what was expected.
func Open(path string, opts Options) (*Engine, error) {
	p, err := modelpath.Resolve(path)
	if err != nil {
		return nil, err
	}
	switch p.Kind {
	case modelpath.KindHF:
		return LoadDir(p.Dir, opts)
	case modelpath.KindLlama2C:
		return LoadLlama2C(p.File, opts)
	}
	return LoadDefault(opts)
}
