package repl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRunStartsCaptureOver: a pass whose `set var stream = 0` at layers.2
// made its layer 2 rows 0 was followed by a `run` stopped (or killed) at
// layers.0, before any captured site; `run` had reset the pass's edits
// ("No edits.") but the captures still held the last pass's rows, and
// `dump` wrote them (3 tokens, layer 2 zeroed) under a manifest naming no
// edit. `run` now starts the recording over when it starts the pass: the
// dump is refused, stopped or killed, saying why, until the new pass has
// recorded its own rows.
func TestRunStartsCaptureOver(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,2")
	f.Exec("capture layers 1,2,4")
	f.Exec("break layers.2")
	f.Exec("run")
	f.AssertExec("set var stream = 0", "edit 1:")
	f.Exec("continue")
	f.Exec("delete")
	f.Exec("gen 1")
	f.Exec("break layers.0")
	f.AssertExec("run", "step 0 (prefill)")
	f.AssertExec("info edits", "No edits.")
	dir := filepath.Join(t.TempDir(), "d")
	f.AssertError("dump "+dir, "the pass is stopped at model.layers.0 (step 0) before any captured site")
	f.AssertExec("kill", "aborted")
	f.AssertError("dump "+dir, "no sequence captured yet: `run` first")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused dump left %s: %v", dir, err)
	}
	f.Exec("delete")
	f.Exec("run")
	f.AssertExec("dump "+dir, "dumped 1 sequence (2 tokens)")
}
