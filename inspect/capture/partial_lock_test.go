package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpPartialUnderJobLock: a REPL `dump X.partial --force` while
// `hsdb capture --out X` writes X.partial replaced the job's staging
// directory (the job held only .X.lock; the dump took .X.partial.lock), so
// the sequences the job had validated were gone while it said "X.partial
// keeps them". A dump to X.partial is refused while X's job runs, X.partial
// keeps its files, and a job for X is refused while such a dump runs.
func TestDumpPartialUnderJobLock(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	out := filepath.Join(t.TempDir(), "d")
	job, err := ResumeDump(out, info, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Add(seqs[:2], reps); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadDir(out + PartialSuffix)
	if err != nil {
		t.Fatal(err)
	}
	oneShot := DumpInfo{Model: info.Model, Layers: info.Layers, What: info.What}
	_, err = CreateDump(out+PartialSuffix, oneShot, DumpOptions{Force: true})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "staging directory of a batch job for "+out) {
		t.Fatalf("dump %s.partial --force while the job for %s runs: %v, want ErrLocked naming the job", out, out, err)
	}
	after, err := os.ReadDir(out + PartialSuffix)
	if err != nil || len(after) != len(before) {
		t.Fatalf("the job's staging directory changed: %d entries before, %d after (%v)", len(before), len(after), err)
	}
	if err := job.Add(seqs[2:], reps); err != nil {
		t.Fatal(err)
	}
	if _, err := job.Finish(len(seqs)); err != nil {
		t.Fatal(err)
	}
	assertPublished(t, out, seqs)

	// The other way round: a one-shot dump to Y.partial holds Y's lock,
	// so a job for Y cannot resume Y.partial under it.
	y := filepath.Join(t.TempDir(), "y")
	dw, err := CreateDump(y+PartialSuffix, oneShot, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ResumeDump(y, info, DumpOptions{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("job for %s while a dump writes %s.partial: %v, want ErrLocked", y, y, err)
	}
	dw.Abort()
	for _, p := range []string{LockName(y), LockName(y + PartialSuffix)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left after the dump ended (%v)", p, err)
		}
	}
	w, err := ResumeDump(y, info, DumpOptions{})
	if err != nil {
		t.Fatalf("job for %s after the dump ended: %v", y, err)
	}
	w.Abort()
}
