package repl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDumpFileAlone: one file of an hsdb dump written at --tp 2,
// checked alone, said "the file records no cross-rank check (only hsdb
// dumps do)" — of a file hsdb's own dump wrote, whose cross-rank check
// its manifest.json holds. The skip now says where the check is kept and
// how to have it read; checking the dump's directory passes it.
func TestCheckDumpFileAlone(t *testing.T) {
	f := newFake(t, 2)
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec(batchCmd)
	f.Exec("capture layers 1")
	f.Exec("run")
	f.AssertExec("dump "+dir, "pass  replicas equal")
	out := f.AssertExec("check "+filepath.Join(dir, "seq_000000.safetensors"), "skip  replicas equal    the file records no cross-rank check (an hsdb dump keeps it in its manifest.json, read when the dump's directory is checked)")
	if strings.Contains(out, "only hsdb dumps do") {
		t.Errorf("a file of an hsdb dump is said not to be one:\n%s", out)
	}
	f.AssertExec("check "+dir, "pass  replicas equal    2 ranks agree")
}
