package modelpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolve: each way of naming a model resolves to its kind, directory
// and file (derived by hand from the paths), and a missing path or a file
// of another kind is an error naming it.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "hf")
	if err := os.Mkdir(hf, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hf/config.json", "stories.bin", "weights.pt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path      string
		kind      Kind
		dir, file string
	}{
		{"", KindEmbedded, "", ""},
		{Embedded, KindEmbedded, "", ""},
		{hf, KindHF, hf, filepath.Join(hf, "config.json")},
		{filepath.Join(hf, "config.json"), KindHF, hf, filepath.Join(hf, "config.json")},
		{filepath.Join(dir, "stories.bin"), KindLlama2C, dir, filepath.Join(dir, "stories.bin")},
	} {
		p, err := Resolve(c.path)
		if err != nil {
			t.Fatalf("%q: %v", c.path, err)
		}
		if p.Kind != c.kind || p.Dir != c.dir || p.File != c.file || p.Given != c.path {
			t.Errorf("%q: got %+v, want kind %d dir %q file %q", c.path, p, c.kind, c.dir, c.file)
		}
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "weights.pt")} {
		if _, err := Resolve(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: error %v, want one naming the path", bad, err)
		}
	}
}

// TestConfigDimsEmbedded: the embedded stories260K's sizes from its
// config.json alone are llama2.c's stories260K (dim 64, 5 layers, 8 heads,
// 4 kv heads, vocab 512, hidden_dim 172: the tinyllamas model card).
func TestConfigDimsEmbedded(t *testing.T) {
	d, err := ConfigDims("")
	if err != nil {
		t.Fatal(err)
	}
	if d.Hidden != 64 || d.Layers != 5 || d.Heads != 8 || d.KVHeads != 4 || d.Vocab != 512 || d.Intermediate != 172 {
		t.Fatalf("%+v", d)
	}
}
