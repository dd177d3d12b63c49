package capture

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
}

// JobProgress is a batch job's state: sequences done (including those a
// resume skipped), their total, tokens run in this process, and time
// since it started.
type JobProgress struct {
	Done, Total int
	Skipped     int // sequences found validated in the staging directory
	Tokens      int64
	Elapsed     time.Duration
}

// JobResult summarises a finished job.
type JobResult struct {
	Manifest *Manifest
	JobProgress
}

// RunCaptureJob captures opts.Layers of every input sequence and dumps one
// file per sequence into opts.Out (design.md's dump format), packing
// sequences into flattened batches of at most MaxBatchTokens tokens. It
// writes into OUT.partial (ResumeDump): sequences already validated there
// by an earlier run of the same job are skipped, every batch's files are
// validated and recorded before the next batch runs, and the directory is
// renamed to OUT only when all sequences are in and Finish's checks pass.
// Every sequence is first checked against the model's Limits (length,
// token ids), so a bad row is named before any forward pass. ctx
// cancelled returns ErrInterrupted with the work so far kept: between
// batches, or within a pass at its next site (stopHook), so that Ctrl-C
// and SIGTERM are honoured during a long row too. Errors also: the forward pass's, the capture's and the dump's
// (ErrInvalid, ErrExists, ErrJobMismatch, safetensors.ErrDiskFull), each
// naming the sequence or file.
func RunCaptureJob(ctx context.Context, e *Target, in *Inputs, opts JobOptions) (*JobResult, error) {
	start := time.Now()
	what, err := ParseWhat(opts.What)
	if err != nil {
		return nil, err
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers(opts.Layers, what); err != nil {
		return nil, err
	}
	if err := in.Check(LimitsOf(e.Dims)); err != nil {
		return nil, err
	}
	job := in.Job
	w, err := ResumeDump(opts.Out, DumpInfo{Model: e.Info, Layers: opts.Layers, What: what, Job: &job}, DumpOptions{Force: opts.Force, DType: opts.DType})
	if err != nil {
		return nil, err
	}
	defer w.Close() // the lock is released however the job ends
	maxTok := opts.MaxBatchTokens
	if maxTok <= 0 {
		maxTok = 4096
	}
	hook := newStopHook(c, len(e.Tree.Sites))
	jobDone := make(chan struct{})
	defer close(jobDone)
	go func() {
		select {
		case <-ctx.Done():
			hook.stop()
		case <-jobDone:
		}
	}()
	res := &JobResult{JobProgress: JobProgress{Total: len(in.Seqs)}}
	var todo []int
	for i, s := range in.Seqs {
		if w.Done(s.ID) {
			res.Skipped++
			continue
		}
		todo = append(todo, i)
	}
	res.Done = res.Skipped
	report := func() {
		res.Elapsed = time.Since(start)
		if opts.Progress != nil {
			opts.Progress(res.JobProgress)
		}
	}
	report()
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("%w after %d of %d sequences; %s keeps them: run the same command again to resume", ErrInterrupted, res.Done, res.Total, w.Stage())
		}
		var batch []int
		tokens := 0
		for len(todo) > 0 && (len(batch) == 0 || tokens+len(in.Seqs[todo[0]].IDs) <= maxTok) {
			tokens += len(in.Seqs[todo[0]].IDs)
			batch = append(batch, todo[0])
			todo = todo[1:]
		}
		seqs := make([][]int32, len(batch))
		for j, i := range batch {
			seqs[j] = in.Seqs[i].IDs
		}
		if err := e.Prefill(seqs, hook); err != nil {
			if errors.Is(err, ErrInterrupted) || ctx.Err() != nil {
				return res, fmt.Errorf("%w in the forward pass of sequences %s..%s, after %d of %d sequences; %s keeps them: run the same command again to resume",
					ErrInterrupted, in.Seqs[batch[0]].ID, in.Seqs[batch[len(batch)-1]].ID, res.Done, res.Total, w.Stage())
			}
			return res, fmt.Errorf("sequences %s..%s: %w", in.Seqs[batch[0]].ID, in.Seqs[batch[len(batch)-1]].ID, err)
		}
		got, reps, err := c.Take()
		if err != nil {
			return res, err
		}
		if len(got) != len(batch) {
			return res, fmt.Errorf("%w: the forward pass captured %d sequences of a batch of %d", ErrInvalid, len(got), len(batch))
		}
		for j, sc := range got {
			src := in.Seqs[batch[j]]
			if !slices.Equal(sc.IDs, src.IDs) {
				return res, fmt.Errorf("%w: sequence %s: captured token ids differ from the input", ErrInvalid, src.ID)
			}
			sc.Seq, sc.ID, sc.LossMask = batch[j], src.ID, src.LossMask
		}
		if err := w.Add(got, reps); err != nil {
			return res, err
		}
		res.Done += len(batch)
		res.Tokens += int64(tokens)
		report()
		if opts.AfterBatch != nil {
			opts.AfterBatch(res.Done)
		}
	}
	m, err := w.Finish(len(in.Seqs))
	res.Manifest = m
	res.Elapsed = time.Since(start)
	return res, err
}
