package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultModelPath is the name the embedded stories260K is reported under.
const DefaultModelPath = "embedded:stories260K"

// Open loads a model from path: "" for the embedded stories260K, a
// directory with config.json and safetensors (sharded or not), or a
// llama2.c checkpoint (*.bin). Errors name the path and what was expected.
func Open(path string, opts Options) (*Engine, error) {
	if path == "" || path == DefaultModelPath {
		return LoadDefault(opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", path, err)
	}
	if st.IsDir() {
		return LoadDir(path, opts)
	}
	if strings.HasSuffix(path, ".bin") {
		return LoadLlama2C(path, opts)
	}
	if filepath.Base(path) == "config.json" {
		return LoadDir(filepath.Dir(path), opts)
	}
	return nil, fmt.Errorf("--model %s: expected a directory with config.json and *.safetensors, or a llama2.c .bin checkpoint", path)
}
