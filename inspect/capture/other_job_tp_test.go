package capture

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestOtherJobAtOtherTP: a dump (finished, or a DIR.partial) of one job at
// --tp 1, met by another job (other ids, other layers) at --tp 2, was
// refused as "finished by this job at another --tp ... Rerun with --tp 1
// to have it verified": the numerics were compared before the job, and
// rerunning the other command at --tp 1 is refused again ("written by
// another job"). Now the other job is named first and no rerun at the
// old tp is offered; the same job at another tp keeps its message
// (TestResumeAtOtherTP).
func TestOtherJobAtOtherTP(t *testing.T) {
	e1, e2, a := tp12Job(t)
	in := func(ids string) *Inputs {
		x, err := ParseIDsList(ids, LimitsOf(e1.Dims))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	out := filepath.Join(t.TempDir(), "o")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := JobOptions{Layers: []int{0, 1}, Out: out, MaxBatchTokens: 8, Writers: 1, AfterBatch: func(done int) {
		if done >= 2 {
			cancel()
		}
	}}
	if _, err := RunCaptureJob(ctx, targetOf(e1), in(a), opts); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: %v, want ErrInterrupted", err)
	}
	other := JobOptions{Layers: []int{1}, Out: out, Writers: 1}
	_, err := RunCaptureJob(context.Background(), targetOf(e2), in("1,5,6"), other)
	if !errors.Is(err, ErrJobMismatch) || !strings.Contains(err.Error(), "was started by another job (other inputs)") || strings.Contains(err.Error(), "Rerun with --tp 1") {
		t.Errorf("partial dump, other job at --tp 2: %v", err)
	}
	opts.AfterBatch = nil
	if _, err := RunCaptureJob(context.Background(), targetOf(e1), in(a), opts); err != nil {
		t.Fatal(err)
	}
	_, err = RunCaptureJob(context.Background(), targetOf(e2), in("1,5,6"), other)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "written by another job (other inputs)") || strings.Contains(err.Error(), "Rerun with --tp 1") {
		t.Errorf("finished dump, other job at --tp 2: %v", err)
	}
}

// TestOtherJobDebuggerDump: a capture job whose --out holds a dump the
// debugger's `dump` wrote (a manifest without a job) said "written by
// another job (other inputs)"; it names the debugger's dump.
func TestOtherJobDebuggerDump(t *testing.T) {
	job := &Manifest{Job: &JobInfo{InputSHA256: "x", Sequences: 1}}
	if got, want := otherJob(&Manifest{}, job), "the debugger's `dump` wrote it, not a capture job"; got != want {
		t.Errorf("otherJob(debugger dump, job) = %q, want %q", got, want)
	}
	if got := otherJob(job, job); got != "" {
		t.Errorf("otherJob(job, same job) = %q, want \"\"", got)
	}
}

// TestOtherJobNamesFormatIDs: `hsdb capture --format speculators --layers
// 0,1,2` then `--layers 0,1,3` on the same --out was refused as "layers
// 0,1, now 0,2": hsdb's layer numbers, not the speculators ids the user
// gave (id 0 = the embeddings, id k = hsdb layer k-1). The refusal names
// the format's ids; hsdb's own dumps keep naming their layers. Values by
// hand from the id mapping.
func TestOtherJobNamesFormatIDs(t *testing.T) {
	job := func(format string, ids, layers []int) *Manifest {
		m := &Manifest{Job: &JobInfo{InputSHA256: "x", Sequences: 2}}
		m.Capture.Format, m.Capture.FormatIDs, m.Capture.Layers = format, ids, layers
		return m
	}
	spec := otherJob(job("speculators", []int{0, 1, 2}, []int{0, 1}), job("speculators", []int{0, 1, 3}, []int{0, 2}))
	if want := "format speculators ids 0,1,2, now speculators ids 0,1,3"; spec != want {
		t.Errorf("speculators: %q, want %q", spec, want)
	}
	own := otherJob(job("", nil, []int{0, 1, 2}), job("", nil, []int{0, 1, 3}))
	if want := "layers 0,1,2, now 0,1,3"; own != want {
		t.Errorf("hsdb dump: %q, want %q", own, want)
	}
	// hsdb's own dump (format "", no format ids) against a speculators
	// job read "format  ids , now speculators ids 1,3"; and a job that
	// differs by --compress alone "format specforge ids 0,1,2, now
	// specforge ids 0,1,2", the same words on both sides.
	mixed := otherJob(job("", nil, []int{1, 3}), job("speculators", []int{1, 3}, []int{0, 2}))
	if want := "format hsdb layers 1,3, now speculators ids 1,3"; mixed != want {
		t.Errorf("hsdb vs speculators: %q, want %q", mixed, want)
	}
	gz := job("specforge", []int{0, 1, 2}, []int{0, 1, 2})
	gz.Capture.Compressed = true
	if got, want := otherJob(job("specforge", []int{0, 1, 2}, []int{0, 1, 2}), gz), "format specforge ids 0,1,2, now specforge ids 0,1,2, compressed"; got != want {
		t.Errorf("--compress alone: %q, want %q", got, want)
	}
}
