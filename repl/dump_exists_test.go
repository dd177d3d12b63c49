package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpOverNonDumpSaysSo: `dump P` where P is an ordinary file (or a
// directory of other files) does not answer "dump exists; give --force to
// replace it" — --force would be refused too — but says P is not an hsdb
// dump and leaves it alone; a real dump still asks for --force.
func TestDumpOverNonDumpSaysSo(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 1")
	f.Exec("run")
	dir := t.TempDir()
	file := filepath.Join(dir, "a.safetensors")
	writeFile(t, file, "not a dump")
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(other, "notes.txt"), "mine")
	for _, p := range []string{file, other} {
		err := f.Term.Exec("dump " + p)
		if err == nil || !strings.Contains(err.Error(), "not an hsdb dump") || strings.Contains(err.Error(), "give --force") {
			t.Errorf("dump %s: %v; want it called not an hsdb dump, without offering --force", p, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "not a dump" {
		t.Fatalf("%s changed", file)
	}
	d := filepath.Join(dir, "d")
	f.AssertExec("dump "+d, "dumped 2 sequences")
	// What d holds, by what was dumped above: the two sequences of
	// batchCmd, layer 1's stream, the fake's model (storiesBin) on one rank.
	f.AssertError("dump "+d, "dump "+d+": dump exists: it holds an hsdb dump in hsdb format: 2 sequences of layers 1 (stream) of model "+storiesBin+" at tp 1, "+
		"written by the debugger's `dump`; give --force to replace it, or write to another directory")
}
