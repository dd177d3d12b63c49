package capture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// smallCapture runs four short sequences through the embedded model with
// layers 0 and 2 captured: what the dump tests write.
func smallCapture(t *testing.T) ([]*SeqCapture, map[string]ReplicaRecord, DumpInfo) {
	t.Helper()
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers([]int{0, 2}, WhatStream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prefill([][]int32{{1, 2, 3}, {1, 5}, {1, 7, 9, 11}, {1, 4}}, c, false); err != nil {
		t.Fatal(err)
	}
	seqs, reps, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		s.ID = fmt.Sprintf("s%d", i)
	}
	return seqs, reps, DumpInfo{Model: infoOf(e), Layers: []int{0, 2}, What: WhatStream, Job: &JobInfo{InputSHA256: "job-a", Sequences: len(seqs)}}
}

// assertPublished checks a published dump against the sequences it must
// hold: manifest complete with every sequence once, each listed file
// present and holding the tensors the manifest records (sha256 of each),
// nothing else in the directory, no staging directory or lock left.
func assertPublished(t *testing.T, dir string, seqs []*SeqCapture) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Complete || len(m.Sequences) != len(seqs) {
		t.Fatalf("%s: complete %v with %d sequences, want %d", dir, m.Complete, len(m.Sequences), len(seqs))
	}
	seen := map[string]bool{}
	for _, r := range m.Sequences {
		if seen[r.ID] {
			t.Fatalf("%s lists %s twice", dir, r.ID)
		}
		seen[r.ID] = true
		if err := verifyFile(filepath.Join(dir, r.File), r, nil, dumpDTypeOf(m)); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(seqs)+1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %v, want the manifest and %d files", dir, names, len(seqs))
	}
	for _, p := range []string{dir + PartialSuffix, LockName(dir)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s left behind (%v)", p, err)
		}
	}
}

func dumpDTypeOf(m *Manifest) tensor.DType {
	dt, _ := tensor.FromSafetensors(m.Capture.DType)
	return dt
}

// runJob is one batch job over seqs into out, as RunCaptureJob drives the
// writer: resume, add the sequences not done (crashAfter >= 0: stop after
// that many, as a kill would, releasing only the lock), finish.
func runJob(out string, seqs []*SeqCapture, reps map[string]ReplicaRecord, info DumpInfo, crashAfter int) error {
	w, err := ResumeDump(out, info, DumpOptions{})
	if err != nil {
		return err
	}
	defer w.Close()
	added := 0
	for _, s := range seqs {
		if w.Done(s.Seq) {
			continue
		}
		if crashAfter >= 0 && added == crashAfter {
			return errCrashed
		}
		if err := w.Add([]*SeqCapture{s}, reps); err != nil {
			return err
		}
		added++
	}
	_, err = w.Finish(len(seqs))
	return err
}

var errCrashed = errors.New("crashed (test)")

// TestCase1OverlappingJobs: cases/README.md case 1 — two jobs for the same
// --out, the second started while the first runs, 200 times over; a third
// of the rounds start from the staging directory of a job killed midway
// (the resume path). Whatever the interleaving, exactly one job publishes,
// the other is refused (ErrLocked while the first runs) or finds it done
// (ErrComplete once it has published: the same job), and the dump is
// complete: every listed file there with
// the recorded sha256 of every tensor, nothing else, no lock or staging
// directory left.
func TestCase1OverlappingJobs(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	root := t.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "hsdb-case1-"); err == nil {
		root = shm // fsync is free on tmpfs: hundreds of rounds in a few seconds
		t.Cleanup(func() { os.RemoveAll(shm) })
	}
	r := rand.New(rand.NewPCG(1, 1))
	locked, exists := 0, 0
	for round := range 200 {
		out := filepath.Join(root, fmt.Sprintf("d%03d", round))
		if round%3 == 0 {
			if err := runJob(out, seqs, reps, info, 1+r.IntN(len(seqs)-1)); !errors.Is(err, errCrashed) {
				t.Fatalf("round %d: the killed job: %v", round, err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		delay := time.Duration(r.IntN(3000)) * time.Microsecond
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if j == 1 {
					time.Sleep(delay)
				}
				errs[j] = runJob(out, seqs, reps, info, -1)
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrLocked):
				locked++
			case errors.Is(err, ErrComplete): // the same job, after the first published: verified, nothing to do
				exists++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d jobs published (%v)", round, ok, errs)
		}
		assertPublished(t, out, seqs)
	}
	if locked == 0 {
		t.Fatal("no round overlapped: the test never exercised the lock")
	}
	t.Logf("of 200 rounds, %d refused the second job with ErrLocked, %d found it complete (it started after the first published)", locked, exists)
}

// TestDumpLockStale: a lock file left by a dead process (its pid, no
// flock held) is taken over; a lock held by a live job of this process is
// refused, naming it.
func TestDumpLockStale(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no `true` to make a dead pid:", err)
	}
	if err := os.WriteFile(LockName(dir), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := lockDump(dir)
	if err != nil {
		t.Fatalf("stale lock of dead pid %d: %v", dead.Process.Pid, err)
	}
	_, err = lockDump(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another job of this process") {
		t.Fatalf("second lock: %v", err)
	}
	l.release()
	if _, err := os.Lstat(LockName(dir)); !os.IsNotExist(err) {
		t.Fatalf("lock file left after release: %v", err)
	}
	l2, err := lockDump(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.release()
}

// TestCase2ForceRefusesFile: case 2 — `dump f --force` where f is an
// ordinary file is refused, and f keeps its bytes.
func TestCase2ForceRefusesFile(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	info.Job = nil
	f := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(f, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Dump(f, seqs, reps, info, DumpOptions{Force: true})
	if !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "is a regular file") {
		t.Fatalf("dump onto a file: %v", err)
	}
	if b, _ := os.ReadFile(f); string(b) != "data\n" {
		t.Fatalf("f now holds %q", b)
	}
}

// TestCase3ForceRefusesForeignDir: case 3 — a directory holding a file
// hsdb did not write is refused by `dump u --force` and by `capture --out
// u --force` (and so is u.partial holding one); the home directory is
// refused whatever it holds; a dump hsdb wrote is replaced.
func TestCase3ForceRefusesForeignDir(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	one := info
	one.Job = nil
	parent := t.TempDir()
	u := filepath.Join(parent, "u")
	if err := os.Mkdir(u, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Dump(u, seqs, reps, one, DumpOptions{Force: true}); !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "has no hsdb manifest") {
		t.Fatalf("dump u --force: %v", err)
	}
	if _, err := ResumeDump(u, info, DumpOptions{Force: true}); !errors.Is(err, ErrNotDump) {
		t.Fatalf("capture --out u --force: %v", err)
	}
	// A real dump with a foreign file added is not hsdb's either.
	d := filepath.Join(parent, "d")
	if _, err := Dump(d, seqs, reps, one, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Dump(d, seqs, reps, one, DumpOptions{Force: true}); !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "holds notes.txt") {
		t.Fatalf("dump with a foreign file: %v", err)
	}
	os.Remove(filepath.Join(d, "notes.txt"))
	if _, err := Dump(d, seqs, reps, one, DumpOptions{Force: true}); err != nil {
		t.Fatalf("replacing hsdb's own dump: %v", err)
	}
	// A foreign u.partial is not removed by a forced job either.
	if err := os.Mkdir(u+PartialSuffix, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u+PartialSuffix, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ResumeDump(filepath.Join(parent, "u2"), info, DumpOptions{}); err != nil {
		t.Fatal(err) // another path: unaffected
	}
	for _, p := range []string{filepath.Join(u, "notes.txt"), filepath.Join(u+PartialSuffix, "notes.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed: %v", p, err)
		}
	}
	home := filepath.Join(parent, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	if _, err := Dump(home, seqs, reps, one, DumpOptions{Force: true}); !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "home directory") {
		t.Fatalf("dump ~ --force: %v", err)
	}
}

// TestCase4ManifestPathLeaves: case 4 — a manifest whose sequences[1].file
// is "../../../etc/hostname" is refused by ReadManifest (which check and
// resume read through), naming the field.
func TestCase4ManifestPathLeaves(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	info.Job = nil
	d := filepath.Join(t.TempDir(), "d")
	if _, err := Dump(d, seqs, reps, info, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, ManifestName)
	b, _ := os.ReadFile(p)
	m, _ := ReadManifest(d)
	b = []byte(strings.Replace(string(b), `"file": "`+m.Sequences[1].File+`"`, `"file": "../../../etc/hostname"`, 1))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadManifest(d)
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), `sequences[1].file: "../../../etc/hostname" is not a file name inside the dump directory`) {
		t.Fatalf("err = %v", err)
	}
	for _, bad := range []string{"/etc/hostname", "..", "a/b.safetensors", `a\b`, ""} {
		if CheckSeqFileName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCase5StaleTemporaries: case 5 — a one-shot dump killed midway leaves
// ".D.tmp-PID-*"; the next dump to D removes those of dead processes and
// reports (Leftovers) one it cannot tell is hsdb's.
func TestCase5StaleTemporaries(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	info.Job = nil
	parent := t.TempDir()
	d := filepath.Join(parent, "D")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no `true` to make a dead pid:", err)
	}
	stale := filepath.Join(parent, fmt.Sprintf(".D.tmp-%d-12345", dead.Process.Pid))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, ".seq_000001.safetensors.tmp-99"), []byte("cut"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "seq_000000.safetensors"), []byte("cut"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(parent, ".D.tmp-777")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := CreateDump(d, info, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the dead process's %s survived: %v", stale, err)
	}
	if len(w.Leftovers) != 1 || w.Leftovers[0] != foreign {
		t.Fatalf("leftovers %v, want [%s]", w.Leftovers, foreign)
	}
	if !strings.HasPrefix(filepath.Base(w.Stage()), fmt.Sprintf(".D.tmp-%d-", os.Getpid())) {
		t.Fatalf("staging directory %s is not named by pid", w.Stage())
	}
	if err := w.Add(seqs, reps); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(len(seqs)); err != nil {
		t.Fatal(err)
	}
}

// TestCase6DiskFullResume: case 6 — a disk full at the 16th file, in the
// middle of a batch, stops the job; the resume keeps the 15 files written
// and validated before it (journaled one by one) and captures the rest.
func TestCase6DiskFullResume(t *testing.T) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := e.Tokenizer()
	in, err := readJSONL("../../testdata/stories260K/stories200.jsonl", tok, LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	in.Seqs, in.Job.Sequences = in.Seqs[:40], 40
	out := filepath.Join(t.TempDir(), "o")
	n := 0
	dumpTestHook = func(p string) error {
		if n++; n > 15 {
			return &os.PathError{Op: "write", Path: p, Err: syscall.ENOSPC}
		}
		return nil
	}
	opts := JobOptions{Layers: []int{1}, Out: out, MaxBatchTokens: 1 << 20} // one batch: the failure is mid-batch
	_, err = RunCaptureJob(context.Background(), targetOf(e), in, opts)
	dumpTestHook = nil
	if !errors.Is(err, safetensors.ErrDiskFull) {
		t.Fatalf("first run: %v", err)
	}
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 15 || res.Done != 40 {
		t.Fatalf("resume skipped %d and finished %d, want 15 and 40", res.Skipped, res.Done)
	}
}

// cancelAt cancels a job's context when the pass reaches a site, then
// waits (up to a second) until the job's stop hook has placed its stop,
// as a SIGTERM arriving mid-row would; it records the last site any rank
// asked about.
type cancelAt struct {
	site   string
	cancel context.CancelFunc
	hook   func() *stopHook
	mu     sync.Mutex
	last   string
}

func (c *cancelAt) Want(ev *model.Event) bool {
	c.mu.Lock()
	c.last = ev.Site.Path
	c.mu.Unlock()
	return ev.Site.Path == c.site
}

func (c *cancelAt) Visit(ev *model.Event, _ []*model.RankView) error {
	c.cancel()
	for start := time.Now(); time.Since(start) < time.Second; time.Sleep(time.Millisecond) {
		if h := c.hook(); h != nil {
			h.mu.Lock()
			placed := h.stopAt >= 0
			h.mu.Unlock()
			if placed {
				break
			}
		}
	}
	return nil
}

// TestCase14InterruptMidPass: case 14's other half — a cancelled context
// (SIGTERM, Ctrl-C) stops the forward pass at the next site, not at the
// end of the row: cancelled at model.layers.1, the pass never reaches
// lm_head, the job returns ErrInterrupted, and nothing of that batch is
// kept.
func TestCase14InterruptMidPass(t *testing.T) {
	e, err := engine.Open("", engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	in, err := ParseIDsList("1,2,3,4;1,5,6", LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var live *stopHook
	var liveMu sync.Mutex
	ca := &cancelAt{site: "model.layers.1", cancel: cancel, hook: func() *stopHook { liveMu.Lock(); defer liveMu.Unlock(); return live }}
	tg := targetOf(e)
	tg.Prefill = func(s [][]int32, h model.Hook) error {
		liveMu.Lock()
		live, _ = h.(*stopHook)
		liveMu.Unlock()
		_, err := e.Prefill(s, model.MultiHook{ca, h}, false)
		return err
	}
	out := filepath.Join(t.TempDir(), "o")
	res, err := RunCaptureJob(ctx, tg, in, JobOptions{Layers: []int{0, 3}, Out: out})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "in the forward pass of sequences 0..1") {
		t.Fatalf("err = %v", err)
	}
	if ca.last == "lm_head" || strings.HasPrefix(ca.last, "model.norm") || strings.HasPrefix(ca.last, "model.layers.4") {
		t.Fatalf("the pass went on to %s after the cancel", ca.last)
	}
	t.Logf("cancelled at model.layers.1; the last site asked about: %s", ca.last)
	if res.Done != 0 {
		t.Fatalf("%d sequences recorded from an interrupted pass", res.Done)
	}
	m, err := ReadManifest(out + PartialSuffix)
	if err != nil || len(m.Sequences) != 0 {
		t.Fatalf("staging manifest: %v %+v", err, m)
	}
}

// TestFinishChecksListedFiles: Finish looks before the rename — a file the
// manifest lists but the staging directory lost is refused (nothing is
// published, the staging directory stays for a resume); a temporary left
// by a write cut short is removed, not published.
func TestFinishChecksListedFiles(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	out := filepath.Join(t.TempDir(), "o")
	w, err := ResumeDump(out, info, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(seqs, reps); err != nil {
		t.Fatal(err)
	}
	m, _ := ReadManifest(w.Stage())
	os.Remove(filepath.Join(w.Stage(), m.Sequences[2].File))
	if _, err := w.Finish(len(seqs)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "its file is missing") {
		t.Fatalf("finish with a lost file: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("published without its files: %v", err)
	}
	// The resume rewrites the lost sequence; a stray temporary is dropped.
	if err := os.WriteFile(filepath.Join(out+PartialSuffix, ".seq_000003.safetensors.tmp-42"), []byte("cut"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runJob(out, seqs, reps, info, -1); err != nil {
		t.Fatal(err)
	}
	assertPublished(t, out, seqs)
}

// TestResumeKeepsForeignFiles: resuming a batch job (no --force) removed
// everything in DIR.partial it had not listed, a file and a directory of
// the user's included (a resume after a kill deleted notes.txt and
// keep/important.txt). A staging directory holding anything hsdb did not
// write is refused naming it, and nothing in it is removed; without it the
// job resumes, keeping the sequences already validated.
func TestResumeKeepsForeignFiles(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	out := filepath.Join(t.TempDir(), "o")
	if err := runJob(out, seqs, reps, info, 1); !errors.Is(err, errCrashed) {
		t.Fatalf("first run: %v", err)
	}
	stage := out + PartialSuffix
	for _, f := range []struct{ name, what string }{{"notes.txt", "holds notes.txt"}, {"keep/important.txt", "holds keep"}} {
		p := filepath.Join(stage, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := runJob(out, seqs, reps, info, -1)
		if !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "resuming "+stage+", which would remove what hsdb did not write") || !strings.Contains(err.Error(), f.what+", which hsdb did not write") {
			t.Fatalf("resume with %s: %v", f.name, err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "mine" {
			t.Fatalf("%s after the refused resume: %q, %v", f.name, b, err)
		}
		os.RemoveAll(filepath.Join(stage, strings.Split(f.name, "/")[0]))
	}
	if err := runJob(out, seqs, reps, info, -1); err != nil {
		t.Fatalf("resume of hsdb's own staging directory: %v", err)
	}
	assertPublished(t, out, seqs)
}
