package repl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpEagle3AuxNote: `dump --format speculators` of three captured
// layers (speculators ids 2,3,4 here: hsdb layers 1-3, no embeddings)
// holds two aux ids before the last, one fewer than EAGLE-3's draft
// reads; dump says so. Adding the embeddings (id 0) makes four ids: no
// note.
func TestDumpEagle3AuxNote(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2,3")
	f.Exec("run")
	dir := t.TempDir()
	f.AssertExec("dump "+filepath.Join(dir, "a")+" --format speculators", "note: speculators ids 2,3,4: the file holds 2 aux ids", "the REPL's ids are the captured layers + 1")
	f.Exec("capture site model.embed_tokens hidden_states")
	f.Exec("run")
	if out := f.Exec("dump " + filepath.Join(dir, "b") + " --format speculators"); strings.Contains(out, "note:") {
		t.Errorf("four ids noted:\n%s", out)
	}
}
