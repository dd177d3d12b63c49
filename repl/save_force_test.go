package repl

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSaveRefusesExistingFile: `save` never replaces an existing file
// without --force (as `dump` never replaces a DIR without it): a slip such
// as `save stream model.safetensors` in a checkpoint directory must leave
// the file byte for byte as it was; --force replaces it.
func TestSaveRefusesExistingFile(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	dir := t.TempDir()
	for _, name := range []string{"model.safetensors", "x.npy"} {
		p := filepath.Join(dir, name)
		orig := []byte("precious bytes, not a tensor file")
		if err := os.WriteFile(p, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		f.AssertError("save stream "+p, "save "+p+": the file exists; give --force to replace it")
		if got, _ := os.ReadFile(p); !bytes.Equal(got, orig) {
			t.Fatalf("%s was changed by a refused save", p)
		}
		f.AssertExec("save stream "+p+" --force", "saved stream [10, 64]")
		if got, _ := os.ReadFile(p); bytes.Equal(got, orig) {
			t.Fatalf("%s: save --force left the old bytes", p)
		}
	}
}
