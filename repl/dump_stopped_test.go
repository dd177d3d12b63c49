package repl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDumpWhileStoppedSaysWhy: `dump` at a breakpoint before a captured
// layer ran names the stop and says to continue (it said only "nothing was
// captured for hidden_states.2", with the trainer formats not even asking
// whether the pass reached it); after `continue` the same dump is written.
// `dump D --format` without its value says it needs one (it said "unknown
// flag --format" although --format is one of the flags it then listed).
func TestDumpWhileStoppedSaysWhy(t *testing.T) {
	f := newHFFake(t, 2)
	f.Exec("input ids 0,5,17,33,2,9,41 ; ids 0,12,7")
	f.Exec("capture site model.norm hidden_states")
	f.Exec("capture layers 0,1,2")
	f.Exec("break layers.1")
	f.AssertExec("run", "model.layers.1")
	dir := filepath.Join(t.TempDir(), "d")
	for _, format := range []string{"hsdb", "specforge"} {
		f.AssertError("dump "+dir+" --format "+format, "nothing was captured for hidden_states.2")
		f.AssertError("dump "+dir+" --format "+format, "the pass is stopped at model.layers.1 (step 0) and has not reached it yet: continue to the end")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused dump left %s: %v", dir, err)
	}
	f.AssertError("dump "+dir+" --format", "dump: --format needs a value")
	f.AssertError("dump "+dir+" --dtype", "dump: --dtype needs a value")
	f.Exec("continue")
	f.AssertExec("dump "+dir+" --format specforge", "dumped 2 sequences")
}

// TestDumpStoppedInDecodeStepSaysWhy: `gen 1` stopped at layers.1 of the
// decode step has appended the 8th row (7 prompt tokens + 1 decoded) to
// layers 0 and 1 but not yet to layer 2; `dump` said only "hidden_states.2
// has 7 rows for 8 tokens", as if the capture were broken. It now names
// the stop as the prefill case does, in hsdb's and the trainer formats.
func TestDumpStoppedInDecodeStepSaysWhy(t *testing.T) {
	f := newHFFake(t, 2)
	f.Exec("input ids 0,5,17,33,2,9,41 ; ids 0,12,7")
	f.Exec("capture site model.norm hidden_states")
	f.Exec("capture layers 0,1,2")
	f.Exec("run")
	f.Exec("break layers.1")
	f.AssertExec("gen 1", "step 1 (decode)")
	dir := filepath.Join(t.TempDir(), "d")
	for _, format := range []string{"hsdb", "specforge"} {
		f.AssertError("dump "+dir+" --format "+format, "hidden_states.2 has 7 rows for 8 tokens: nothing was captured for its last 1")
		f.AssertError("dump "+dir+" --format "+format, "the pass is stopped at model.layers.1 (step 1) and has not reached it yet: continue to the end")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused dump left %s: %v", dir, err)
	}
	f.Exec("continue")
	f.AssertExec("dump "+dir+" --format specforge", "dumped 2 sequences (8, 4 tokens)")
}
