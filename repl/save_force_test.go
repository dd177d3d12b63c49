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
// the file byte for byte as it was. --force replaces only what save
// itself wrote: a foreign file stays as it was even with --force, a
// .safetensors file written by save is replaced, and a .npy file (which
// carries no mark of its writer) never is.
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
		f.AssertError("save stream "+p+" --force", "save "+p+": the file exists")
		if got, _ := os.ReadFile(p); !bytes.Equal(got, orig) {
			t.Fatalf("%s was changed by a refused save", p)
		}
	}
	p := filepath.Join(dir, "mine.safetensors")
	f.AssertExec("save stream "+p, "saved stream [10, 64]")
	first, _ := os.ReadFile(p)
	f.AssertExec("save residual "+p+" --force", "saved residual [10, 64]")
	if got, _ := os.ReadFile(p); bytes.Equal(got, first) {
		t.Fatalf("%s: save --force over save's own file left the old bytes", p)
	}
	q := filepath.Join(dir, "mine.npy")
	f.AssertExec("save stream "+q, "saved stream [10, 64]")
	f.AssertError("save stream "+q+" --force", "hsdb never replaces one")
}
