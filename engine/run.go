package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Logits is the result of a forward step: one row of vocab_size float32
// logits per requested token, Rows[i] being the token row (in the flattened
// batch) of row i of Values ([rows, vocab]).
type Logits struct {
	Rows   []int32
	Values *tensor.Tensor
}

// Row returns logits row i as []float32 of vocab_size.
func (l *Logits) Row(i int) []float32 {
	c := l.Values.Cols()
	return l.Values.F32()[i*c : (i+1)*c]
}

// Prefill starts new sequences: it forgets the previous ones, runs every
// prompt of seqs as one flattened batch (sequence i in KV slot i) and returns
// the logits of each sequence's last token, or of every token with
// allLogits. hook (may be nil) observes the step. Errors: an empty batch or
// sequence, a token id outside the vocabulary (naming sequence and token),
// a device failure (naming rank), or the hook's own Visit error.
func (e *Engine) Prefill(seqs [][]int32, hook model.Hook, allLogits bool) (*Logits, error) {
	if len(seqs) == 0 {
		return nil, fmt.Errorf("prefill: no sequences")
	}
	b := &model.Batch{AllLogits: allLogits}
	for s, ids := range seqs {
		if len(ids) == 0 {
			return nil, fmt.Errorf("prefill: sequence %d is empty", s)
		}
		b.IDs = append(b.IDs, ids...)
		for p := range ids {
			b.Pos = append(b.Pos, int32(p))
		}
		b.SeqLens = append(b.SeqLens, len(ids))
		b.Seqs = append(b.Seqs, s)
		b.Slots = append(b.Slots, s)
	}
	if err := b.Validate(e.Dims.Vocab); err != nil {
		return nil, err
	}
	e.seqs = nil
	e.step = 0
	out, err := e.run(b, hook)
	if err != nil {
		return nil, err
	}
	e.seqs = make([]seqState, len(seqs))
	for s, ids := range seqs {
		e.seqs[s].ids = append([]int32(nil), ids...)
	}
	return out, nil
}

// Decode appends one token to each sequence of the last prefill (ids[i] to
// sequence i) and runs one decode step, returning each sequence's logits.
// Error: a sequence would pass max_position_embeddings (Batch.CheckPositions:
// decoding is what grows the KV cache without bound; a prefill, like HF's
// forward, runs whatever length it is given, which check's layer matching
// relies on for a flattened batch read as one sequence).
func (e *Engine) Decode(ids []int32, hook model.Hook) (*Logits, error) {
	if len(e.seqs) == 0 {
		return nil, fmt.Errorf("decode: no sequences: run a prefill first")
	}
	if len(ids) != len(e.seqs) {
		return nil, fmt.Errorf("decode: %d tokens for %d sequences", len(ids), len(e.seqs))
	}
	b := &model.Batch{Step: e.step + 1}
	for s, id := range ids {
		b.IDs = append(b.IDs, id)
		b.Pos = append(b.Pos, int32(len(e.seqs[s].ids)))
		b.SeqLens = append(b.SeqLens, 1)
		b.Seqs = append(b.Seqs, s)
		b.Slots = append(b.Slots, s)
	}
	if err := b.Validate(e.Dims.Vocab); err != nil {
		return nil, err
	}
	if err := b.CheckPositions(e.Dims.MaxPos); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	out, err := e.run(b, hook)
	if err != nil {
		return nil, err
	}
	e.step++
	for s, id := range ids {
		e.seqs[s].ids = append(e.seqs[s].ids, id)
	}
	return out, nil
}

// Sequences returns the tokens of every sequence so far.
func (e *Engine) Sequences() [][]int32 {
	out := make([][]int32, len(e.seqs))
	for i, s := range e.seqs {
		out[i] = append([]int32(nil), s.ids...)
	}
	return out
}

// run executes one step on every rank (one goroutine per rank when World >
// 1) and returns rank 0's gathered logits.
func (e *Engine) run(b *model.Batch, hook model.Hook) (*Logits, error) {
	if e.workers != nil {
		if err := e.workers.Begin(b.Step == 0); err != nil {
			return nil, err
		}
	}
	if e.commGroup != nil {
		e.commGroup.Reset()
	}
	e.siteGroup.Reset()
	pass := &model.Pass{Hook: hook, Group: e.siteGroup, Batch: b, Faults: e.Faults}
	results := make([]*tensor.Tensor, e.World)
	errs := make([]error, e.World)
	fail := func(i int, err error) {
		errs[i] = err
		if e.commGroup != nil {
			e.commGroup.Abort(err)
		}
		if e.workers != nil {
			e.workers.Abort(err)
		}
		e.siteGroup.Abort(err)
	}
	runRank := func(i int) {
		defer func() {
			if p := recover(); p != nil {
				fail(i, rankError(i, p))
			}
		}()
		if e.workers != nil {
			out, err := e.workers.Ranks()[i].Forward(pass, b, i == 0)
			if err != nil {
				fail(i, err)
			}
			results[i] = out
			return
		}
		results[i] = e.forwardRank(e.ranks[i], pass, b, i == 0)
	}
	if e.World == 1 {
		runRank(0)
	} else {
		var wg sync.WaitGroup
		for i := range e.World {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runRank(i)
			}()
		}
		wg.Wait()
	}
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return &Logits{Rows: b.LogitRows(), Values: results[0]}, nil
}

// scopeUnwinder is a device whose scopes can be closed down to a depth
// (the CUDA backend's), so a step that ends in a panic does not leave its
// activations allocated.
type scopeUnwinder interface {
	ScopeDepth() int
	UnwindScopes(depth int)
}

// rankError turns a rank's panic into an error: a hook's stop passes
// through, a device error names the rank, anything else is a bug reported
// with its stack.
func rankError(rank int, p any) error {
	switch v := p.(type) {
	case *model.StopError:
		return v.Err
	case *backend.DeviceError:
		return fmt.Errorf("rank %d: %w", rank, v)
	case error:
		if errors.Is(v, backend.ErrAborted) {
			return v
		}
		return fmt.Errorf("rank %d: internal error: %w\n%s", rank, v, debug.Stack())
	}
	return fmt.Errorf("rank %d: internal error: %v\n%s", rank, p, debug.Stack())
}

// firstError returns the most telling error: a rank's own failure before
// the aborts it caused on the others.
func firstError(errs []error) error {
	var aborted error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, backend.ErrAborted) {
			if aborted == nil {
				aborted = err
			}
			continue
		}
		return err
	}
	return aborted
}
