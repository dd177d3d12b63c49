package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpOverCaptureJobSaysWhatItHolds: the debugger's `dump D` over a
// dump that a `hsdb capture` job wrote answered "dump D: dump exists; give
// --force to replace it", which said neither what D holds nor the other
// ways on. It now names the format, samples, layers, model and job, and
// the ways on: --force, another directory, or the job again (which, rerun,
// verifies the finished dump: exit 0). The speculators ids 1,2 are hsdb
// layers 0,1 (id k = layer k-1's output, README).
func TestDumpOverCaptureJobSaysWhatItHolds(t *testing.T) {
	d := filepath.Join(t.TempDir(), "hs")
	job := []string{"capture", "--format", "speculators", "--layers", "1,2", "--ids", "1,2,3;4,5", "--out", d}
	if out, errs, code := runHsdb(t, job...); code != 0 {
		t.Fatalf("capture: exit %d\n%s\n%s", code, out, errs)
	}
	script := filepath.Join(t.TempDir(), "dump.hsdb")
	if err := os.WriteFile(script, []byte("input ids 1,403,407 ; ids 1,400\ncapture layers 1\nrun\ndump "+d+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runHsdb(t, "-x", script)
	want := "dump " + d + ": dump exists: it holds an hsdb dump in speculators format: 2 samples of hsdb layers 0,1 (stream) of model embedded:stories260K at tp 1, " +
		"written by an `hsdb capture` job on --ids (finished); give --force to replace it, write to another directory, or rerun the `hsdb capture` command that wrote it"
	if code == 0 || !strings.Contains(out+errs, want) {
		t.Errorf("dump over the job's dump: exit %d, want non-zero and %q in\n%s\n%s", code, want, out, errs)
	}
	if out, errs, code := runHsdb(t, job...); code != 0 || !strings.Contains(out, "already complete and valid") {
		t.Errorf("the same job again: exit %d, want 0 and already complete\n%s\n%s", code, out, errs)
	}
}
