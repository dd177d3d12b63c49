package capture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"hsdb/engine/tensor"
)

// ErrInterrupted is returned by RunCaptureJob when its context was
// cancelled between forward passes; the staging directory holds every
// sequence finished so far and the same job resumes from there.
var ErrInterrupted = errors.New("capture interrupted")

// JobOptions configures a batch capture job (`hsdb capture`).
type JobOptions struct {
	Layers []int
	What   string // WhatStream ("" too), WhatHidden or WhatResidual
	Out    string // the dump directory
	Force  bool   // replace an existing dump or another job's staging directory
	DType  tensor.DType
	// MaxBatchTokens bounds the tokens of one forward pass: sequences are
	// packed in input order into flattened batches (vLLM's token batch) of
	// at most this many tokens; a longer sequence runs alone. 0 means
	// 4096.
	MaxBatchTokens int
	// Progress, when set, is called before the first batch and after every
	// batch.
	Progress func(JobProgress)
	// AfterBatch, when set, is called after each batch is written (tests
	// use it to stop a job midway).
	AfterBatch func(done int)
	// Plan, when set, chooses the file format and what is captured
	// (PlanLayers); Layers is then ignored. nil writes hsdb's own dump of
	// Layers.
	Plan *Plan
	// Compress gzips SpecForge samples (.ckpt.gz).
	Compress bool
	// Writers is how many sequence files are written and validated at
	// once (0, a negative count or more than MaxWriters: 4). Files of one batch are written while the next batch's
	// forward pass runs.
	Writers int
}

// rowsHeldHook, when set by a test, is told how many input rows the job
// holds as each batch is packed (the batch and the row read ahead).
var rowsHeldHook func(rows int)

// MaxWriters bounds JobOptions.Writers: each file in flight holds its
// sequence's tensors in memory, and the forward pass waits only when this
// many are in flight.
const MaxWriters = 256

// JobProgress is a batch job's state: sequences done (including those a
// resume skipped), their total, tokens run in this process, and time
// since it started.
type JobProgress struct {
	Done, Total int
	Skipped     int // sequences found validated in the staging directory
	Tokens      int64
	Elapsed     time.Duration
	// Bytes are the bytes of the files written by this process (tensors
	// and headers), BytesPerToken the captured tensor bytes per token
	// (ids included) the format stores.
	Bytes         int64
	BytesPerToken int64
	// Recaptured names the sequences a resume found with a kept file that
	// fails its check (missing, truncated, changed: Dropped) or not holding
	// their input row (the input changed while an earlier run read it),
	// captured again, one line each.
	Recaptured []string
}

// JobResult summarises a finished job.
type JobResult struct {
	Manifest *Manifest
	// Complete: opts.Out already held this job's finished dump, verified
	// file by file (ErrComplete); the job ran nothing and wrote nothing,
	// and Manifest is the one read from it.
	Complete bool
	JobProgress
}

// RunCaptureJob captures what opts.Plan names (or opts.Layers of hsdb's
// own dump) for every input sequence and writes one file per sequence into
// opts.Out in the plan's format (design.md's dump, speculators'
// hs_{idx}.safetensors or SpecForge's rows_*/data_{idx}.ckpt), packing
// sequences into flattened batches of at most MaxBatchTokens tokens. Every
// sequence is first checked against the model's Limits (length, token
// ids), so a bad row is named before any forward pass (Inputs.Check; an
// OpenJSONL file validated against the same limits is not read twice).
// The rows are then read as the batches are packed (Inputs.Rows), so a
// streamed file costs a batch in memory, not the file; a file changed
// since it was validated is an error. It writes into
// OUT.partial (ResumeDump): sequences already validated there by an
// earlier run of the same job are skipped; each batch's files are written
// and validated by up to opts.Writers goroutines while the next batch's
// forward pass runs, and recorded in order; the directory is renamed to
// OUT only when all sequences are in and Finish's checks pass. A rerun
// of a job whose dump OUT is complete verifies it and returns it with
// Complete set, running nothing (without Force; CompleteDump). ctx
// cancelled returns ErrInterrupted with the work so far kept: between
// the files a rerun re-reads first (DumpOptions.Stop), between
// batches, or within a pass at its next site (stopHook), so that Ctrl-C
// and SIGTERM are honoured during a long row too. Errors also: the forward
// pass's, the capture's and the dump's (ErrInvalid, ErrExists,
// ErrJobMismatch, ErrFormat, safetensors.ErrDiskFull), each naming the
// sequence or file; the first writer error stops the job.
func RunCaptureJob(ctx context.Context, e *Target, in *Inputs, opts JobOptions) (*JobResult, error) {
	start := time.Now()
	what, err := ParseWhat(opts.What)
	if err != nil {
		return nil, err
	}
	lim := LimitsOf(e.Dims)
	if err := in.Check(lim); err != nil {
		return nil, err
	}
	plan := opts.Plan
	if plan == nil {
		plan = &Plan{Format: FormatHsdb, IDs: opts.Layers}
		for _, l := range opts.Layers {
			plan.Srcs = append(plan.Srcs, Source{Layer: l})
		}
	}
	if err := CheckWhat(plan.Format, what); err != nil {
		return nil, err
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers(plan.HsdbLayers(), what); err != nil && len(plan.HsdbLayers()) > 0 {
		return nil, err
	}
	for _, src := range plan.Srcs {
		if src.Embed || src.Norm {
			site, name, _ := strings.Cut(src.Key(), ":")
			if err := c.AddSite(site, name); err != nil {
				return nil, err
			}
		}
	}
	job := in.Job
	info := DumpInfo{Model: e.Info, Layers: plan.HsdbLayers(), What: what, Job: &job, Plan: plan}
	w, err := ResumeDump(opts.Out, info, DumpOptions{Force: opts.Force, DType: opts.DType, Compress: opts.Compress, Stop: ctx.Done()})
	var finished *CompleteDump
	if errors.As(err, &finished) { // a rerun of a finished job: verified, nothing to do
		if err := finished.checkRows(ctx, in); err != nil {
			return nil, err
		}
		n := len(finished.Manifest.Sequences)
		return &JobResult{Manifest: finished.Manifest, Complete: true,
			JobProgress: JobProgress{Done: n, Total: in.Len(), Skipped: n, Elapsed: time.Since(start)}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer w.Close() // the lock is released however the job ends
	maxTok := opts.MaxBatchTokens
	if maxTok <= 0 {
		maxTok = 4096
	}
	// Captured layers are copied to pinned host memory while the pass goes
	// on, where the device can (model.AsyncHoster); a pass's buffer is
	// reused once its files are written: enough buffers for the writers'
	// files in flight and the pass running, at most 8.
	c.UsePinned(min(writersOf(opts)+2, 8), maxTok)
	defer c.ReleasePinned() // after stop(): every writer is done with its buffer
	hook := newStopHook(c, len(e.Tree.Sites))
	jobDone := make(chan struct{})
	defer close(jobDone)
	go func() {
		select {
		case <-ctx.Done():
			hook.stop(e)
		case <-jobDone:
		}
	}()
	// Sequences a resume kept are all of this job's input (ResumeDump
	// keeps only a staging directory of the same input sha256); the rows
	// are read as the batches are packed, and theirs skipped.
	res := &JobResult{JobProgress: JobProgress{Total: in.Len(), BytesPerToken: w.bytesPerToken(len(plan.Srcs), in.Len() > 0 && in.Masked == in.Len())}}
	res.Recaptured = w.Dropped()
	if w.Count() > 0 {
		notes, err := w.recheckKept(in)
		if err != nil {
			return nil, err
		}
		res.Recaptured = append(res.Recaptured, notes...)
	}
	res.Skipped = w.Count()
	res.Done = res.Skipped
	rows, err := in.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type row struct {
		i int
		s InputSeq
	}
	var next *row // the row read ahead that did not fit the last batch
	eof := false
	read := func() (*row, error) {
		if next != nil {
			r := next
			next = nil
			return r, nil
		}
		for !eof {
			i, s, err := rows.Next()
			if err == io.EOF {
				eof = true
				break
			}
			if err != nil {
				return nil, err
			}
			if w.Done(i) { // kept by the resume (recheckKept checked it holds this row); the committer does not change the set
				continue
			}
			return &row{i, s}, nil
		}
		return nil, nil
	}
	var mu sync.Mutex // res, between this loop and the writer
	report := func() {
		res.Elapsed = time.Since(start)
		if opts.Progress != nil {
			opts.Progress(res.JobProgress)
		}
	}
	report()
	// Files are written by up to `writers` goroutines at once, across
	// batches, while the next forward passes run (the forward pass waits
	// only when that many are in flight); a committer records each batch in
	// input order once all its files are validated. The first error stops
	// the job; files written after it are discarded by the resume.
	writers := writersOf(opts)
	sem := make(chan struct{}, writers)
	type pending struct {
		ids  []string
		recs []SeqRecord
		errs []error
		wg   sync.WaitGroup
		reps map[string]ReplicaRecord
	}
	queue := make(chan *pending, writers+1) // back-pressure: a batch's files are in flight or queued, not the job's
	var werr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range queue {
			p.wg.Wait()
			// Every file validated is recorded, those of a batch with a
			// failed file too (a full disk keeps what was written for the
			// resume); the first error ends the job.
			var recs []SeqRecord
			var ferr error
			for j := range p.ids {
				if p.errs[j] != nil {
					ferr = cmp.Or(ferr, p.errs[j])
					continue
				}
				recs = append(recs, p.recs[j])
			}
			cerr := w.commit(recs, p.reps)
			mu.Lock()
			if cerr == nil {
				res.Done += len(recs)
				for _, r := range recs {
					res.Tokens += int64(r.Length)
					res.Bytes += recBytes(r)
				}
				report()
			}
			if werr == nil {
				werr = cmp.Or(ferr, cerr)
			}
			ok := ferr == nil && cerr == nil
			n := res.Done
			mu.Unlock()
			if ok && opts.AfterBatch != nil {
				opts.AfterBatch(n)
			}
		}
	}()
	writerErr := func() error {
		mu.Lock()
		defer mu.Unlock()
		return werr
	}
	// resumable says, on a failure, what the staging directory keeps and
	// that the same command resumes (a dead rank worker, a full disk, an
	// input changed: the validated files are not lost).
	resumable := func(err error) error {
		if err == nil || w.Count() == 0 {
			return err
		}
		return fmt.Errorf("%w; %s keeps the %d sequences validated so far: the same command resumes from there", err, w.Stage(), w.Count())
	}
	stop := func(err error) (*JobResult, error) {
		close(queue)
		<-done
		if we := writerErr(); we != nil {
			return res, resumable(we)
		}
		return res, resumable(err)
	}
	interrupted := func(where string) (*JobResult, error) {
		close(queue)
		<-done // res is the writer's until it has drained
		if we := writerErr(); we != nil {
			return res, we
		}
		return res, fmt.Errorf("%w%s after %d of %d sequences; %s keeps them: run the same command again to resume", ErrInterrupted, where, res.Done, res.Total, w.Stage())
	}
	for {
		if err := writerErr(); err != nil {
			return stop(nil)
		}
		if err := ctx.Err(); err != nil {
			return interrupted("")
		}
		var batch []row
		tokens := 0
		for {
			r, err := read()
			if err != nil {
				return stop(err)
			}
			if r == nil {
				break
			}
			if len(batch) > 0 && tokens+len(r.s.IDs) > maxTok {
				next = r
				break
			}
			if why := lim.check(r.s.IDs); why != "" { // Check passed: only a file changed since fails here
				return stop(fmt.Errorf("%s: sequence %d (id %q): %s", in.Job.Input, r.i, r.s.ID, why))
			}
			tokens += len(r.s.IDs)
			batch = append(batch, *r)
		}
		if len(batch) == 0 {
			break
		}
		if rowsHeldHook != nil {
			held := len(batch)
			if next != nil {
				held++
			}
			rowsHeldHook(held)
		}
		seqs := make([][]int32, len(batch))
		for j, r := range batch {
			seqs[j] = r.s.IDs
		}
		if err := e.Prefill(seqs, hook); err != nil {
			if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
				return interrupted(fmt.Sprintf(" in the forward pass of sequences %s..%s,", batch[0].s.ID, batch[len(batch)-1].s.ID))
			}
			return stop(fmt.Errorf("sequences %s..%s: %w", batch[0].s.ID, batch[len(batch)-1].s.ID, err))
		}
		got, reps, arena, err := c.TakeBatch()
		if err != nil {
			arena.Done()
			return stop(err)
		}
		if len(got) != len(batch) {
			arena.Done()
			return stop(fmt.Errorf("%w: the forward pass captured %d sequences of a batch of %d", ErrInvalid, len(got), len(batch)))
		}
		p := &pending{ids: make([]string, len(got)), recs: make([]SeqRecord, len(got)), errs: make([]error, len(got)), reps: reps}
		for j, sc := range got {
			src := batch[j].s
			if !slices.Equal(sc.IDs, src.IDs) {
				arena.Done()
				return stop(fmt.Errorf("%w: sequence %s: captured token ids differ from the input", ErrInvalid, src.ID))
			}
			sc.Seq, sc.ID, sc.LossMask = batch[j].i, src.ID, src.LossMask
			p.ids[j] = seqID(sc)
		}
		for j, sc := range got {
			sem <- struct{}{}
			p.wg.Add(1)
			arena.Add(1) // the file's tensors are views of the pass's pinned memory
			go func() {
				defer func() { arena.Done(); <-sem; p.wg.Done() }()
				p.recs[j], p.errs[j] = w.writeSeq(sc, p.ids[j])
			}()
		}
		arena.Done() // the writers hold it now; the last gives it back for a later pass
		queue <- p
	}
	if _, err := stop(nil); err != nil {
		return res, err
	}
	m, err := w.Finish(in.Len())
	res.Manifest = m
	res.Elapsed = time.Since(start)
	return res, err
}

// writersOf is opts.Writers, or 4 when it is not in 1..MaxWriters (a
// negative count would panic in make, a huge one lift the back-pressure).
func writersOf(opts JobOptions) int {
	if opts.Writers <= 0 || opts.Writers > MaxWriters {
		return 4
	}
	return opts.Writers
}
