package capture

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// Dump errors, for errors.Is.
var (
	// ErrExists: the dump directory exists and --force was not given.
	ErrExists = errors.New("dump exists")
	// ErrInvalid: a sequence failed validation (a shape, a checksum, a
	// value re-read differently, NaN or Inf, two identical layers); nothing
	// of it was kept.
	ErrInvalid = errors.New("capture failed validation")
	// ErrNotCaptured (with ErrInvalid): a captured key holds nothing for a
	// sequence, or fewer rows than its tokens (a decode step stopped before
	// the key's site): the pass did not reach its site.
	ErrNotCaptured = errors.New("nothing was captured")
	// ErrJobMismatch: a batch job's staging directory was started by a job
	// with other inputs, layers or model.
	ErrJobMismatch = errors.New("staging directory belongs to another job")
)

// PartialSuffix is appended to a batch job's dump directory while it is
// being written ("out" is staged in "out.partial"); the directory is
// renamed to its final name only once complete and validated.
const PartialSuffix = ".partial"

// DumpInfo is what a dump's manifest says about the model and the capture.
type DumpInfo struct {
	Model  ModelInfo
	Layers []int      // captured decoder layers, in order
	What   string     // WhatStream, WhatHidden or WhatResidual
	Sites  []SiteInfo // site captures
	// Job identifies a batch job's inputs (nil for a one-shot dump).
	Job *JobInfo
	// Faults are the faults injected while the data was recorded
	// (Capturer.Under); nil for a clean run.
	Faults []string
	// Edits describe the debugger's edits (`set var`, `patch`) applied in
	// the pass the captures come from: values that are not the model's own.
	Edits []string
	// Plan, when its Format is not FormatHsdb, writes the trainer's
	// per-sample files (dump_format.go) from the plan's sources instead of
	// hsdb's seq files; Layers must then be Plan.HsdbLayers().
	Plan *Plan
}

// DumpOptions controls writing.
type DumpOptions struct {
	// Force replaces an existing dump (and, for a batch job, a staging
	// directory of another job).
	Force bool
	// DType is the dtype of float captures in the files: F32, BF16 or F16
	// (round to nearest even). Invalid takes the model's dtype when it is
	// one of those, else F32.
	DType tensor.DType
	// Compress gzips SpecForge samples (data_{idx}.ckpt.gz, as
	// prepare_hidden_states.py --compress does); other formats have no
	// compressed variant their trainer reads.
	Compress bool
	// Stop, closed (a job's ctx.Done()), ends the re-reading of files a
	// rerun does before capturing anything: verifying a finished dump
	// (completeJob) or the validated files of a staging directory
	// (keepValidated), between files, with ErrInterrupted and nothing
	// changed. Nil never stops.
	Stop <-chan struct{}

	// job is set by ResumeDump (a batch job): an existing dump of the same
	// job is then verified and reported complete (ErrComplete) instead of
	// ErrExists.
	job bool
}

// DumpWriter writes a dump sequence by sequence into a staging directory
// and renames it into place when Finish has validated everything, so a
// reader never sees a partial dump at the final path. The batch job's
// staging directory (DIR.partial) survives an interruption and is resumed;
// a one-shot dump (Dump) uses a temporary directory removed on failure.
type DumpWriter struct {
	dir, stage string
	resumable  bool
	m          *Manifest
	dtype      tensor.DType
	hidden     int
	// count is the number of sequences recorded (kept by a resume and
	// committed since); done holds their input indices while a resume's
	// kept ones are skipped (Add marks its own). The records themselves
	// are in the journal, not in memory (dump_stream.go); a one-shot
	// dump (not resumable) also keeps them in m.Sequences for its caller.
	count int
	done  indexSet
	// dropped and droppedN: the kept sequences a resume found failing
	// their check (dropKept), the first lines and the count.
	dropped  []string
	droppedN int
	journal  *os.File  // the append-only record of validated sequences (fsynced for a batch job)
	lock     *dumpLock // held until Finish, Abort or Close
	plan     *Plan     // a trainer format's plan; nil for hsdb's own files
	compress bool
	stop     <-chan struct{} // DumpOptions.Stop
	// Leftovers are staging directories of earlier dumps of the same path
	// that CreateDump found beside it but could not tell were hsdb's (so
	// left in place); the caller names them.
	Leftovers []string
}

// dumpTestHook, when set by a test, runs before each sequence file is
// written and can fail it (injecting ENOSPC); nil in normal use.
var dumpTestHook func(path string) error

// dumpTestHookMu serialises dumpTestHook's calls: a capture job writes
// files on several goroutines.
var dumpTestHookMu sync.Mutex

// runTestHook calls dumpTestHook, if set, one call at a time.
func runTestHook(path string) error {
	if dumpTestHook == nil {
		return nil
	}
	dumpTestHookMu.Lock()
	defer dumpTestHookMu.Unlock()
	return dumpTestHook(path)
}

// dumpDType picks the files' float dtype.
func dumpDType(opts DumpOptions, model string) (tensor.DType, error) {
	switch opts.DType {
	case tensor.F32, tensor.BF16, tensor.F16:
		return opts.DType, nil
	case tensor.Invalid:
		if dt, err := tensor.ParseDType(model); err == nil && (dt == tensor.BF16 || dt == tensor.F16) {
			return dt, nil
		}
		return tensor.F32, nil
	}
	return tensor.Invalid, fmt.Errorf("dump dtype %s: want f32, bf16 or f16", opts.DType)
}

func newManifest(info DumpInfo, dt tensor.DType) *Manifest {
	m := &Manifest{Format: ManifestFormat, HsdbVersion: Version(), Created: time.Now().UTC().Format(time.RFC3339),
		Model: info.Model, Job: info.Job, Faults: info.Faults, Edits: info.Edits,
		Capture:  CaptureInfo{Layers: append([]int{}, info.Layers...), What: info.What, Sites: info.Sites, DType: dt.SafetensorsName()},
		Replicas: map[string]ReplicaRecord{}, Sequences: []SeqRecord{}}
	if info.What == WhatStream && len(info.Layers) > 0 {
		m.Capture.HFIndex = map[string]*int{}
		last := info.Model.Dims["num_hidden_layers"] - 1
		m.Capture.HFNote = "hidden_states.{i} (stream = hidden_states + residual) equals HF output_hidden_states[i+1]; index 0 is the embeddings, and HF's last entry has the final norm applied"
		for _, l := range info.Layers {
			var idx *int // the last layer's raw output: no HF index
			if l == last {
				m.Capture.HFNote += fmt.Sprintf(", so hidden_states.%d, the last decoder layer's raw output, has no HF index (null here; output_hidden_states[-1] is the normed entry)", l)
			} else {
				idx = new(l + 1)
			}
			m.Capture.HFIndex[fmt.Sprintf("hidden_states.%d", l)] = idx
		}
	}
	return m
}

// CreateDump starts a one-shot dump of dir (its missing parent directories
// are made): a temporary staging directory
// beside it (".DIR.tmp-PID-*"), under dir's lock (lockDump), after removing
// the staging directories dead processes left there (removeStaleTemps;
// those it could not tell are hsdb's are listed in Leftovers). Errors:
// ErrLocked; ErrExists when dir exists without opts.Force (also
// ErrNotDump when it is not a dump hsdb wrote: --force is then not
// offered); ErrNotDump when opts.Force would replace something hsdb did not
// write; a bad dtype; the
// staging directory cannot be created (permission, disk full: the OS
// error, named).
func CreateDump(dir string, info DumpInfo, opts DumpOptions) (*DumpWriter, error) {
	w, err := prepare(dir, info, opts)
	if err != nil {
		return nil, err
	}
	w.Leftovers = removeStaleTemps(w.dir)
	stage, err := os.MkdirTemp(filepath.Dir(w.dir), fmt.Sprintf("%s%d-", tempPrefix(w.dir), os.Getpid()))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("dump %s: creating the staging directory: %w", dir, diskFull(err))
	}
	w.stage = stage
	if w.journal, err = os.OpenFile(filepath.Join(stage, JournalName), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		w.Abort()
		return nil, fmt.Errorf("dump %s: %w", dir, diskFull(err))
	}
	return w, nil
}

func prepare(dir string, info DumpInfo, opts DumpOptions) (*DumpWriter, error) {
	if dir == "" {
		return nil, fmt.Errorf("dump: no directory given")
	}
	dir = filepath.Clean(dir)
	if info.Plan != nil && info.Plan.Format != FormatHsdb && opts.DType == tensor.Invalid {
		opts.DType = tensor.BF16 // speculators' BaseDataset and SpecForge's trainer take bf16 hidden states
	}
	if (info.Plan == nil || info.Plan.Format != FormatSpecForge) && opts.Compress { // speculators' too: its trainer reads .safetensors only
		return nil, fmt.Errorf("dump %s: %w: --compress: only SpecForge samples have a compressed form their trainer reads (.ckpt.gz)", dir, ErrFormat)
	}
	if info.Plan != nil && info.Plan.Format == FormatSpecForge { // a plan not made by PlanLayers: refused before anything is written
		if err := SpecForgeAuxCount(info.Plan.IDs, info.Model.Dims["num_hidden_layers"], "three"); err != nil {
			return nil, fmt.Errorf("dump %s: %w", dir, err)
		}
	}
	dt, err := dumpDType(opts, info.Model.DType)
	if err != nil {
		return nil, err
	}
	if _, err := ParseWhat(info.What); err != nil && len(info.Layers) > 0 {
		return nil, err
	}
	if why := protectedDir(dir); why != "" {
		return nil, fmt.Errorf("dump %s: %w: it is %s", dir, ErrNotDump, why)
	}
	// Missing parents are made, as SpecForge's cache/hidden_states/ needs
	// (its lock and staging directory live beside DIR).
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("dump %s: creating its parent directory: %w", dir, diskFull(err))
	}
	lock, err := lockDump(dir)
	if err != nil {
		return nil, err
	}
	if err := outFree(dir, opts.Force); err != nil {
		if opts.job && !opts.Force && errors.Is(err, ErrExists) && !errors.Is(err, ErrNotDump) {
			// A dump hsdb wrote, and a batch job: the same job, finished
			// before, is verified and reported complete (ErrComplete).
			defer lock.release()
			return nil, newWriter(dir, info, opts, dt, nil).completeJob()
		}
		lock.release()
		return nil, err
	}
	return newWriter(dir, info, opts, dt, lock), nil
}

// newWriter is the DumpWriter of dir, its manifest's header made from info
// (and the trainer format's plan), before any file is written.
func newWriter(dir string, info DumpInfo, opts DumpOptions, dt tensor.DType, lock *dumpLock) *DumpWriter {
	w := &DumpWriter{dir: dir, m: newManifest(info, dt), dtype: dt, hidden: info.Model.Dims["hidden_size"], lock: lock, stop: opts.Stop}
	if info.Plan != nil && info.Plan.Format != FormatHsdb {
		w.plan, w.compress = info.Plan, opts.Compress
		w.m.Capture.Format, w.m.Capture.FormatIDs, w.m.Capture.Mapping, w.m.Capture.Compressed = string(info.Plan.Format), info.Plan.IDs, info.Plan.Lines, opts.Compress
	}
	return w
}

// CheckOut refuses dir as a dump's destination for what is there already,
// as CreateDump and ResumeDump do (which check again under the dump's
// lock): ErrNotDump for a protected directory (the home or working
// directory, /); an existing dir without force, ErrExists (also
// ErrNotDump when hsdb did not write it: --force is then not offered); with
// force, ErrNotDump when hsdb did not write it. It needs no model, so a
// job calls it before loading one: a 600 GB checkpoint is not read to
// learn that --out holds a finished dump.
func CheckOut(dir string, force bool) error {
	if why := protectedDir(dir); why != "" {
		return fmt.Errorf("dump %s: %w: it is %s", dir, ErrNotDump, why)
	}
	return outFree(dir, force)
}

// outFree is CheckOut's answer for an existing dir: what is there decides
// it. A dump hsdb wrote is replaced with --force; anything else never is,
// so --force is not offered.
func outFree(dir string, force bool) error {
	if _, err := os.Lstat(dir); err != nil {
		return nil
	}
	if err := hsdbOwned(dir, false); err != nil {
		if !force {
			return &existsNotDump{fmt.Sprintf("dump %s: exists and is %v (--force replaces only a dump hsdb wrote): choose another DIR", dir, err), err}
		}
		return fmt.Errorf("dump %s: --force replaces only a dump hsdb wrote: %w", dir, err)
	}
	if !force {
		return existsError(dir)
	}
	return nil
}

// removeOwned removes a staging directory after checking that it holds
// only what hsdb writes (hsdbOwned); a missing one is no error.
func removeOwned(stage string) error {
	if _, err := os.Lstat(stage); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := hsdbOwned(stage, true); err != nil {
		return fmt.Errorf("--force replaces only what hsdb wrote: %w", err)
	}
	return os.RemoveAll(stage)
}

// Done reports whether the sequence of input index i (SeqCapture.Seq,
// SeqRecord.Index) is already written and validated: kept by a resume (a
// resumed job skips it) or added by Add.
func (w *DumpWriter) Done(i int) bool { return w.done.has(i) }

// Count returns the number of sequences written and validated so far.
func (w *DumpWriter) Count() int { return w.count }

// Stage returns the staging directory.
func (w *DumpWriter) Stage() string { return w.stage }

// Add writes one safetensors file per sequence (input_ids [len] I64,
// loss_mask [len] I64 when given, hidden_states.{layer} [len, hidden] and
// site captures [len, width] in the dump dtype), each atomically
// (safetensors.WriteFile: temporary file, fsync, re-read, rename), then
// re-reads it and validates it (verifyFile): names, shapes, dtypes, the
// sha256 of each tensor, values equal to the captured values, all finite,
// layers pairwise different. Only then is it recorded in the journal
// (commit); a batch job journals the pass's cross-rank checks first and
// then each sequence as soon as it is validated (fsynced), so a failure
// in the middle of a batch — a full disk — keeps every file written
// before it for the resume. reps are the cross-rank checks of the pass
// (merged per key). Errors: ErrInvalid naming the sequence and what
// failed (its file is removed); a sequence whose input index is already
// in the dump; safetensors.ErrDiskFull; other I/O errors naming the file.
func (w *DumpWriter) Add(seqs []*SeqCapture, reps map[string]ReplicaRecord) error {
	if err := w.commit(nil, reps); err != nil {
		return err
	}
	for _, s := range seqs {
		id := seqID(s)
		if w.Done(s.Seq) {
			return fmt.Errorf("dump %s: sequence %s (input index %d) is already in the dump", w.dir, id, s.Seq)
		}
		rec, err := w.writeSeq(s, id)
		if err != nil {
			return err
		}
		if err := w.commit([]SeqRecord{rec}, nil); err != nil {
			return err
		}
		w.done.add(s.Seq)
	}
	return nil
}

// Finish validates the whole dump (every sequence validated, the layers as
// requested, replicated tensors equal across ranks), writes the final
// manifest (Complete; streamed from the journal in input order,
// writeManifestStreamed, so that its memory does not grow with the
// number of sequences) and renames the staging directory to the dump's
// path, replacing an existing dump when Force was given (the old one is
// moved aside first and removed after). expected is the number of
// sequences the dump must hold (0: any). On failure a one-shot dump's
// staging directory is removed; a batch job's stays for a resume. The
// returned manifest has no Sequences for a batch job (they are in
// manifest.json; Summary counts them); a one-shot dump's has them.
func (w *DumpWriter) Finish(expected int) (*Manifest, error) {
	defer w.lock.release()
	w.closeJournal()
	fail := func(err error) (*Manifest, error) {
		w.m.Complete = false
		if !w.resumable {
			w.Abort()
		}
		return w.m, err
	}
	st, err := w.scanStage()
	if err != nil {
		return fail(fmt.Errorf("dump %s: %w", w.dir, err))
	}
	w.m.Summary = st.sum
	res := w.validateDump(expected, st.sum.Sequences, st.nbad, st.unvalidated)
	w.m.Validation = res
	for _, r := range res {
		if r.Status == Fail.String() {
			return fail(fmt.Errorf("dump %s: %w: %s: %s", w.dir, ErrInvalid, r.Rule, r.Detail))
		}
	}
	if st.stageErr != nil {
		return fail(fmt.Errorf("dump %s: %w", w.dir, st.stageErr))
	}
	w.removeStrays(&st.files)
	w.m.Complete = true
	n, err := writeManifestStreamed(w.stage, *w.m, func(f func(SeqRecord) error) error {
		return journalRecords(filepath.Join(w.stage, JournalName), nil, f)
	})
	if err == nil && n != st.sum.Sequences {
		err = fmt.Errorf("%w: the journal lists %d sequences, %d when first read", ErrInvalid, n, st.sum.Sequences)
	}
	if err != nil {
		return fail(fmt.Errorf("dump %s: %w", w.dir, diskFull(err)))
	}
	slices.SortStableFunc(w.m.Sequences, func(a, b SeqRecord) int { return cmp.Compare(a.Index, b.Index) }) // a one-shot dump's, as written
	if err := os.Remove(filepath.Join(w.stage, JournalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return w.m, fmt.Errorf("dump %s: %w", w.dir, err)
	}
	if err := os.Chmod(w.stage, 0o755); err != nil {
		return w.m, fmt.Errorf("dump %s: %w", w.dir, err)
	}
	var aside string
	if _, err := os.Lstat(w.dir); err == nil {
		// prepare checked it with --force; check again under the lock, now.
		if err := hsdbOwned(w.dir, false); err != nil {
			return fail(fmt.Errorf("dump %s: --force replaces only a dump hsdb wrote: %w", w.dir, err))
		}
		aside = fmt.Sprintf("%s.old-%d", w.dir, time.Now().UnixNano())
		if err := os.Rename(w.dir, aside); err != nil {
			return w.m, fmt.Errorf("dump %s: moving the existing dump aside: %w", w.dir, err)
		}
	}
	if err := os.Rename(w.stage, w.dir); err != nil {
		if aside != "" {
			os.Rename(aside, w.dir)
		}
		return w.m, fmt.Errorf("dump %s: renaming %s into place: %w", w.dir, w.stage, err)
	}
	if err := syncDir(filepath.Dir(w.dir)); err != nil {
		return w.m, fmt.Errorf("dump %s: written, but %w", w.dir, err)
	}
	if aside != "" {
		if err := os.RemoveAll(aside); err != nil {
			return w.m, fmt.Errorf("dump %s: written; the replaced dump %s could not be removed: %w", w.dir, aside, err)
		}
	}
	return w.m, nil
}

// Abort removes a one-shot dump's staging directory (a batch job's is kept
// for a resume; Abort removes it too when called explicitly).
func (w *DumpWriter) Abort() {
	w.closeJournal()
	if w.stage != "" {
		os.RemoveAll(w.stage)
	}
	w.lock.release()
}

// Close ends the writer without finishing: a batch job's staging
// directory stays for a resume; the journal is closed and the lock
// released. Finish and Abort close too; closing twice is harmless.
func (w *DumpWriter) Close() {
	w.closeJournal()
	w.lock.release()
}

// Dump writes captured sequences as a dump directory in one go (the REPL's
// `dump DIR [--force]`): CreateDump, Add, Finish. A failure leaves no
// partial dump (the staging directory is removed) and the error says what
// happened: ErrExists, ErrInvalid, safetensors.ErrDiskFull, or the OS
// error of the failing step, naming the path.
func Dump(dir string, seqs []*SeqCapture, reps map[string]ReplicaRecord, info DumpInfo, opts DumpOptions) (*Manifest, error) {
	w, err := CreateDump(dir, info, opts)
	if err != nil {
		return nil, err
	}
	if err := w.Add(seqs, reps); err != nil {
		w.Abort()
		return nil, err
	}
	return w.Finish(len(seqs))
}

// diskFull marks ENOSPC with safetensors.ErrDiskFull.
func diskFull(err error) error {
	if err != nil && errors.Is(err, errNoSpace) && !errors.Is(err, safetensors.ErrDiskFull) {
		return fmt.Errorf("%w: %w", safetensors.ErrDiskFull, err)
	}
	return err
}

// existsNotDump is the refusal of a DIR that exists and is not a dump hsdb
// wrote: it is ErrExists (no --force was given) and the ErrNotDump saying
// what DIR is, in one message that does not offer --force, which would be
// refused too.
type existsNotDump struct {
	msg string
	err error // the ErrNotDump from hsdbOwned
}

func (e *existsNotDump) Error() string   { return e.msg }
func (e *existsNotDump) Unwrap() []error { return []error{ErrExists, e.err} }
