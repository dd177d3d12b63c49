package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
)

// TestResumeAtOtherTP: a job of 20 sequences on the HF llama fixture at
// --tp 1 is interrupted after its second batch (one 6-token sequence per
// batch of at most 8 tokens), then run again at --tp 2. The resume is refused (the
// decision in otherNumerics: a dump is one run's numerics, and tp changes
// the rounding of the all-reduced sums), and the message says why and how
// to go on: the count of validated sequences the staging directory holds
// (as its manifest lists them), both tps, rerun with --tp 1, --force,
// another --out; the staging directory is left as it was. Rerun at --tp
// 1, the job resumes and finishes. Its finished dump, rerun at --tp 2, is
// refused likewise ("have it verified"); at --tp 1 it is reported
// complete.
func TestResumeAtOtherTP(t *testing.T) {
	e1, e2, ids := tp12Job(t)
	input := func() *Inputs {
		in, err := ParseIDsList(ids, LimitsOf(e1.Dims))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	out := filepath.Join(t.TempDir(), "o")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := JobOptions{Layers: []int{0, 1}, Out: out, MaxBatchTokens: 8, Writers: 1,
		AfterBatch: func(done int) {
			if done >= 2 {
				cancel()
			}
		}}
	if _, err := RunCaptureJob(ctx, targetOf(e1), input(), opts); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: %v, want ErrInterrupted", err)
	}
	stage := out + PartialSuffix
	m, err := ReadManifest(stage)
	if err != nil {
		t.Fatal(err)
	}
	n := len(m.Sequences)
	if n < 2 || n >= 20 {
		t.Fatalf("the interrupted job validated %d of 20 sequences, want 2 to 19", n)
	}
	journal, err := os.ReadFile(filepath.Join(stage, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	opts.AfterBatch = nil
	_, err = RunCaptureJob(context.Background(), targetOf(e2), input(), opts)
	for _, want := range []string{
		stage + " was started by this job at another --tp: ",
		fmt.Sprintf("it holds %d validated sequences captured at --tp 1; this run is at --tp 2. hsdb does not mix them in one dump", n),
		"bf16 rounds each",
		"Rerun with --tp 1 to resume it, give --force to start over at --tp 2 (capturing those again), or choose another --out",
	} {
		if !errors.Is(err, ErrJobMismatch) || !strings.Contains(err.Error(), want) {
			t.Errorf("resume at --tp 2: %v\nwant %q", err, want)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(stage, JournalName)); string(now) != string(journal) {
		t.Error("the refused resume changed the staging directory's journal")
	}
	res, err := RunCaptureJob(context.Background(), targetOf(e1), input(), opts)
	if err != nil || res.Skipped != n || res.Done != 20 {
		t.Fatalf("resume at --tp 1: %v %+v, want %d skipped of 20", err, res, n)
	}
	_, err = RunCaptureJob(context.Background(), targetOf(e2), input(), opts)
	if want := "dump exists, finished by this job at another --tp: it holds 20 validated sequences captured at --tp 1; this run is at --tp 2."; !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), want) ||
		!strings.Contains(err.Error(), "Rerun with --tp 1 to have it verified, give --force to replace it with a capture at --tp 2") {
		t.Errorf("finished dump at --tp 2: %v\nwant %q", err, want)
	}
	res, err = RunCaptureJob(context.Background(), targetOf(e1), input(), opts)
	if err != nil || !res.Complete || res.Skipped != 20 || res.Manifest.Summary.Sequences != 20 || res.Manifest.Summary.Tokens != 120 {
		t.Fatalf("finished dump at --tp 1: %v %+v, want complete, 20 sequences of 120 tokens", err, res)
	}
}

// TestSameJobNumerics: a staging directory of the same job on another
// GPU of the same kind (cuda:0, now cuda:3 or cuda:0/rank1) is the same
// job, and so is one whose manifest has no device (an older hsdb); on
// another kind of device (cpu, now cuda), under another --dtype (weights
// rounded to bf16 on load, now as stored) or --ep it is not, and the
// refusal says so as it does for tp. Messages by hand from otherNumerics'
// wording.
func TestSameJobNumerics(t *testing.T) {
	mk := func(dev, dt string, ep bool) *Manifest {
		return &Manifest{Model: ModelInfo{WorldSize: 8, Device: dev, WeightDType: dt, ExpertParallel: ep}}
	}
	for _, c := range []struct {
		a, b *Manifest
		why  string
	}{
		{mk("cuda:0", "", false), mk("cuda:3", "", false), ""},
		{mk("cuda:0", "", false), mk("cuda:0/rank1", "", false), ""},
		{mk("", "", false), mk("cuda:3", "", false), ""},
		{mk("cpu", "", false), mk("cuda:0", "", false), "--device cpu, now --device cuda"},
		{mk("cpu", "bf16", false), mk("cpu", "", false), "--dtype bf16, now without --dtype"},
		{mk("cpu", "", false), mk("cpu:1", "", true), "without --ep, now --ep"},
	} {
		if why := sameJob(c.a, c.b); why != c.why {
			t.Errorf("%+v vs %+v: %q, want %q", c.a.Model, c.b.Model, why, c.why)
		}
	}
	setting, msg := otherNumerics(mk("cpu", "", false), mk("cuda:0", "", false), 5, false)
	if setting != "--device" || !strings.Contains(msg, "it holds 5 validated sequences captured at --device cpu; this run is at --device cuda.") ||
		!strings.Contains(msg, "Rerun with --device cpu to resume it, give --force to start over at --device cuda (capturing those again)") {
		t.Errorf("cpu vs cuda:0: %s %q", setting, msg)
	}
	setting, msg = otherNumerics(mk("cpu", "bf16", false), mk("cpu", "", false), 1, true)
	if setting != "--dtype" || !strings.Contains(msg, "it holds 1 validated sequence captured at --dtype bf16; this run is without --dtype.") ||
		!strings.Contains(msg, "--dtype rounds the weights on load") ||
		!strings.Contains(msg, "Rerun with --dtype bf16 to have it verified, give --force to replace it with a capture without --dtype") {
		t.Errorf("bf16 vs as stored: %s %q", setting, msg)
	}
	setting, msg = otherNumerics(mk("cpu", "", true), mk("cpu", "", false), 2, false)
	if setting != "--ep" || !strings.Contains(msg, "captured with --ep; this run is without --ep.") || !strings.Contains(msg, "Rerun with --ep to resume it") {
		t.Errorf("ep vs not: %s %q", setting, msg)
	}
	// the other way round: a flag without a value is "with --ep", not "at --ep"
	setting, msg = otherNumerics(mk("cpu", "", false), mk("cpu", "", true), 2, false)
	if setting != "--ep" || !strings.Contains(msg, "captured without --ep; this run is with --ep.") || !strings.Contains(msg, "start over with --ep") {
		t.Errorf("not vs ep: %s %q", setting, msg)
	}
}

// tp12Job opens the HF llama fixture at --tp 1 and --tp 2 (closed when t
// ends) and returns with them a job's --ids of 20 sequences of 6 tokens
// ("1,k,k+1,...,k+4" for k = 10..29: one per batch of at most 8 tokens,
// so a job stopped after its second batch is far from its end).
func tp12Job(t *testing.T) (e1, e2 *engine.Engine, ids string) {
	t.Helper()
	e1, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e1.Close() })
	e2, err = engine.Open("../../testdata/hf/llama", engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e2.Close() })
	var seqs []string
	for k := range 20 {
		seqs = append(seqs, fmt.Sprintf("1,%d,%d,%d,%d,%d", 10+k, 11+k, 12+k, 13+k, 14+k))
	}
	return e1, e2, strings.Join(seqs, ";")
}
