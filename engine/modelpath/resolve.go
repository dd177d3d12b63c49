package modelpath

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Embedded is the name the embedded stories260K (engine/stories) is
// reported under, and the path that selects it ("" selects it too).
const Embedded = "embedded:stories260K"

// Kind is what a model path names.
type Kind uint8

const (
	// KindEmbedded: "" or Embedded, the stories260K files in engine/stories.
	KindEmbedded Kind = iota
	// KindHF: an HF model directory (config.json and safetensors, sharded
	// or not), given as the directory or as its config.json.
	KindHF
	// KindLlama2C: a llama2.c checkpoint (*.bin, llama2.c's legacy float32
	// format), converted on load.
	KindLlama2C
)

// Path is a resolved model path.
type Path struct {
	Kind Kind
	// Given is the path as the user wrote it (--model).
	Given string
	// Dir is the HF model directory, or the directory holding the llama2.c
	// checkpoint (where its tokenizer is looked for); "" when embedded.
	Dir string
	// File is the HF config.json, or the llama2.c .bin; "" when embedded.
	File string
}

// Resolve says what kind of model path is: "" or Embedded for the embedded
// stories260K; an existing directory (or a file named config.json, whose
// directory is meant) for an HF model; an existing *.bin file for a
// llama2.c checkpoint. It only looks at the name and os.Stat; the files
// are read by their loaders. Errors name the path (as --model) and what
// was expected. This is the one place hsdb decides it: the engine's loader,
// its tokenizer search, `info model`'s stored dtypes and ConfigJSON all
// call it.
func Resolve(path string) (Path, error) {
	p := Path{Given: path}
	if path == "" || path == Embedded {
		return p, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return p, fmt.Errorf("--model %s: %w", path, err)
	}
	switch {
	case st.IsDir():
		p.Kind, p.Dir, p.File = KindHF, path, filepath.Join(path, "config.json")
	case strings.HasSuffix(path, ".bin"):
		p.Kind, p.Dir, p.File = KindLlama2C, filepath.Dir(path), path
	case filepath.Base(path) == "config.json":
		p.Kind, p.Dir, p.File = KindHF, filepath.Dir(path), path
	default:
		return p, fmt.Errorf("--model %s: expected a directory with config.json and *.safetensors, or a llama2.c .bin checkpoint", path)
	}
	return p, nil
}
