package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// hostileCopy copies the checkpoint testdata/hf/<name> (config, index and
// weights; not the reference outputs) into a fresh temporary directory, for
// a test that damages it.
func hostileCopy(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "testdata", "hf", name)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "reference") || strings.HasPrefix(e.Name(), "attn_probs") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hostileJSON rewrites the JSON object file path through edit.
func hostileJSON(t *testing.T, path string, edit func(m map[string]any)) {
	t.Helper()
	enginetest.EditJSON(t, path, edit)
}

// hostileTensors rewrites the safetensors file path through edit, which
// may change, add (appending the name to order) or delete tensors.
func hostileTensors(t *testing.T, path string, edit func(m map[string]*tensor.Tensor, order *[]string)) {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*tensor.Tensor{}
	order := f.Names()
	for _, n := range order {
		x, err := f.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = &tensor.Tensor{Shape: append([]int{}, x.Shape...), DType: x.DType, Data: append([]byte{}, x.Data...)}
	}
	meta := f.Metadata()
	f.Close()
	edit(m, &order)
	var nt []safetensors.Named
	for _, n := range order {
		if m[n] != nil {
			nt = append(nt, safetensors.Named{Name: n, T: m[n]})
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(path, nt, meta); err != nil {
		t.Fatal(err)
	}
}
