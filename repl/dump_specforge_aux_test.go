package repl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDumpSpecForgeFourAuxRefused: `dump --format specforge` of four
// captured layers wrote aux_hidden_state [1, len, 4·hidden] with a note,
// and `check` of it then failed: SpecForge trains on exactly three aux
// layers (specforge/modeling/draft/llama3_eagle.py: fc takes
// 3·target_hidden_size; specforge/application/planning.py: exactly three
// aux_hidden_state_layer_ids). The dump is now refused before anything is
// written, naming the layers given and what SpecForge reads; three of
// them dump and check passes.
func TestDumpSpecForgeFourAuxRefused(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2,3,4")
	f.Exec("capture site model.norm hidden_states")
	f.Exec("run")
	parent := t.TempDir()
	dir := filepath.Join(parent, "sf")
	f.AssertError("dump "+dir+" --format specforge", "dump: invalid capture request: specforge ids 1,2,3,4 (hsdb layers 1,2,3,4): 4 aux layers would make aux_hidden_state [1, len, 4·hidden], which SpecForge cannot train on: it reads exactly 3 ([1, len, 3·hidden]")
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("the refused dump left %v in %s", ents, parent)
	}
	f.Exec("capture clear")
	f.Exec("capture layers 1,2,4")
	f.Exec("capture site model.norm hidden_states")
	f.Exec("run")
	f.AssertExec("dump "+dir+" --format specforge", "dumped 2 sequences")
	f.AssertExec("check "+dir, "2 files: 2 valid")
}
