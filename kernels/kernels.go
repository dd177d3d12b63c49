package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed ptx/*.ptx
var ptxFS embed.FS

// hashPrefix opens the first line of every generated .ptx
// (scripts/build-kernels.sh).
const hashPrefix = "// source-sha256: "

// ErrUnknownModule is returned by Lookup for a module name with no embedded
// PTX.
var ErrUnknownModule = errors.New("kernels: unknown module")

// Module is one compiled kernel source file: kernels/NAME.cu compiled to
// kernels/ptx/NAME.ptx.
type Module struct {
	// Name is the source's base name without extension ("rmsnorm").
	Name string
	// PTX is the full text of ptx/NAME.ptx, NUL-free, ready for
	// cuModuleLoadData (which wants it NUL-terminated: the loader appends
	// the NUL).
	PTX string
	// SourceSHA256 is the lower-case hex SHA-256 recorded in the PTX's first
	// line: of NAME.cu followed by every kernels/*.cuh in name order, as
	// scripts/build-kernels.sh computed it when it generated the PTX.
	SourceSHA256 string
}

var modules = func() map[string]Module {
	ents, err := fs.ReadDir(ptxFS, "ptx")
	if err != nil {
		panic(fmt.Sprintf("kernels: embedded ptx directory: %v", err))
	}
	m := make(map[string]Module, len(ents))
	for _, e := range ents {
		b, err := ptxFS.ReadFile(path.Join("ptx", e.Name()))
		if err != nil {
			panic(fmt.Sprintf("kernels: embedded %s: %v", e.Name(), err))
		}
		text := string(b)
		first, _, _ := strings.Cut(text, "\n")
		name := strings.TrimSuffix(e.Name(), ".ptx")
		m[name] = Module{Name: name, PTX: text, SourceSHA256: strings.TrimPrefix(first, hashPrefix)}
	}
	return m
}()

// Lookup returns the embedded module NAME (the base name of its .cu file).
// It returns an error wrapping ErrUnknownModule, listing the known modules,
// when there is none.
func Lookup(name string) (Module, error) {
	m, ok := modules[name]
	if !ok {
		return Module{}, fmt.Errorf("%w %q (embedded: %s)", ErrUnknownModule, name, strings.Join(Names(), ", "))
	}
	return m, nil
}

// Names returns the names of every embedded module, sorted.
func Names() []string {
	out := make([]string, 0, len(modules))
	for n := range modules {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
