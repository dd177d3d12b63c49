package inspect

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden maps a directory of the module (with everything below it) to
// the import paths (and everything below them) its non-test files must not
// import: the layering each package's doc.go states (engine below inspect,
// inspect below repl and cmd; within inspect, stats < capture < client <
// check < debug; the CUDA driver below the CUDA backend; front ends hold
// only the client).
var forbidden = map[string][]string{
	"engine":                     {"hsdb/inspect", "hsdb/repl", "hsdb/cmd"},
	"engine/backend/cuda/driver": {"hsdb/engine/backend/cuda/", "hsdb/engine/model", "hsdb/engine/arch"},
	"inspect/stats":              {"hsdb/inspect/", "hsdb/engine/backend", "hsdb/engine/arch"},
	"inspect/capture":            {"hsdb/inspect/check", "hsdb/inspect/client", "hsdb/inspect/debug", "hsdb/engine/backend"},
	"inspect/client":             {"hsdb/engine/", "hsdb/inspect/check", "hsdb/inspect/debug"},
	"inspect/check":              {"hsdb/inspect/debug", "hsdb/engine/backend"},
	"inspect/debug":              {"hsdb/engine/backend", "hsdb/engine/arch"},
	"inspect":                    {"hsdb/repl", "hsdb/cmd"},
	"repl":                       {"hsdb/engine/model", "hsdb/engine/backend", "hsdb/inspect/debug", "hsdb/inspect/capture", "hsdb/inspect/check", "hsdb/cmd"},
}

// below reports whether import path p is path or lies under it ("x/" means
// strictly under x; "hsdb/engine/" matches hsdb/engine itself too).
func below(p, path string) bool {
	if strings.HasSuffix(path, "/") {
		return p == strings.TrimSuffix(path, "/") || strings.HasPrefix(p, path)
	}
	return p == path || strings.HasPrefix(p, path+"/")
}

// TestLayers reads the imports of every non-test Go file of the module
// (all build tags: the cuda files too) and fails on an import that runs
// against the layering: the check `go list -f '{{.ImportPath}} {{join
// .Imports " "}}' ./...` lets one do by eye.
func TestLayers(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		n++
		for dir, bad := range forbidden {
			if rel != dir && !strings.HasPrefix(rel, dir+"/") {
				continue
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range bad {
					if below(p, b) && !below(p, "hsdb/"+rel) {
						t.Errorf("%s imports %s: %s must not import %s", path, p, dir, b)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d Go files: expected the whole module under %s", n, root)
	}
}
