package repl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDumpFlagGivenTwice: `dump D --format speculators --format hsdb` wrote
// the hsdb format, the first value dropped without a word (as the command
// line's flags did before they refused a second value); the debugger's
// dump refuses two different values of --format or --dtype naming both,
// writes nothing, and takes the same value twice (bf16 and bfloat16 are
// one dtype).
func TestDumpFlagGivenTwice(t *testing.T) {
	f := newHFFake(t, 1)
	f.Exec("input ids 0,5,17 ; ids 0,12")
	f.Exec("capture layers 0,1,2")
	f.Exec("run")
	dir := filepath.Join(t.TempDir(), "d")
	f.AssertError("dump "+dir+" --format speculators --format hsdb", `dump: --format given twice, as "speculators" and "hsdb": give one`)
	f.AssertError("dump "+dir+" --dtype f32 --dtype=bf16", "dump: --dtype given twice, as f32 and bf16: give one")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused dump left %s: %v", dir, err)
	}
	f.AssertExec("dump "+dir+" --dtype bf16 --dtype bfloat16 --format hsdb --format=hsdb", "dumped 2 sequences")
}
