package engine

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Workers runs an engine's ranks in worker processes, one per rank
// (engine/worker's front, `hsdb --workers`): the engine in the front keeps
// the config, the module tree and the sequences, and drives each rank
// through its RemoteRank as it drives a local one, so the debugger's hook
// sees every rank at every wanted site as before. vLLM runs one worker
// process per GPU for the same reason: a rank that dies takes only its
// process down.
type Workers interface {
	// Ranks returns the world's ranks in rank order.
	Ranks() []RemoteRank
	// Bind gives the workers the front's module tree: the sites their
	// messages name by index. Error: a worker built another tree (another
	// model's files on its host).
	Bind(t *model.Tree) error
	// Begin readies the workers for a step: a prefill (prefill true) first
	// starts fresh workers in place of dead ones; a decode step fails,
	// naming the rank, when a worker died since the last prefill (its KV
	// cache is gone). It also resets the collectives' rendezvous.
	Begin(prefill bool) error
	// Abort wakes every rank waiting in a collective of the current step
	// (they fail with an error wrapping backend.ErrAborted and cause).
	Abort(cause error)
	// Interrupt tells the workers of the running step that the hook now
	// wants more sites than its last model.SiteFilter answer said (an
	// interrupt: stop at the next site): each asks at every site from now
	// on and reports where it is, which the front gives the step's hook
	// (SiteFilter.Passed). done is called once every worker of the step
	// has reported (or ended its step), from any goroutine.
	Interrupt(done func())
	// Abandon gives up the front's requests at a stop (statistics, values,
	// memory) that a worker has not answered (Ctrl-C while no pass runs):
	// it returns one line per such worker naming its rank and how long it
	// has been silent, and a worker that stays silent for a further
	// second is ended as failed (its state is unknown), its fault naming
	// the rank and the wait. Safe from any goroutine; never blocks.
	Abandon() []string
	// States returns every worker as `info ranks` shows it, in slot order
	// (stage × TP + rank), without waiting on any.
	States() []WorkerState
	// Replaced returns, and forgets, one line per worker that Begin
	// replaced with a fresh one since the last call, naming its rank and
	// the fault it was ended for (the front's log says the same as it
	// happens); the debugger adds them to the notes of the outcome of the
	// command whose pass replaced them, which --json prints too.
	Replaced() []string
	// Close stops the workers.
	Close() error
}

// RemoteRank is one rank whose weights, KV cache and forward pass live in
// a worker process.
type RemoteRank interface {
	// Forward runs step b on the worker. Every site the worker reaches is
	// offered to pass.Hook.Want; at a wanted site the rank meets the others
	// through pass.Meet with a view whose tensors are handles served by
	// the worker. It returns the step's logits [rows, vocab] (f32) when
	// logits is true, else nil. Errors: the hook's Visit error as it is;
	// an abort caused by another rank (wrapping backend.ErrAborted); the
	// worker's own failure or death, naming its rank, host, last error and
	// the site it was at.
	Forward(pass *model.Pass, b *model.Batch, logits bool) (*tensor.Tensor, error)
	// Device is the front's stand-in for the worker's device: Name,
	// ActDType, Moments, ToHost and MemoryInUse are served by the worker
	// (only the small results cross); the compute ops are not available in
	// the front.
	Device() backend.Device
	// CacheBytes returns the worker's KV-cache bytes.
	CacheBytes() int64
	// Report is what the worker's load of its shard read and converted.
	Report() model.LoadReport
}

// Interrupt readies the running pass for a stop at the next site that
// no rank has reached (Ctrl-C). Ranks in process ask the hook at every
// site and done runs at once; ranks in worker processes, which ask only
// at the sites the hook's model.SiteFilter named, are told to ask at every
// site and report where they are (Workers.Interrupt), and done runs once
// they all have: the hook may then place its stop after every site any
// rank has passed.
func (e *Engine) Interrupt(done func()) {
	if e.workers == nil {
		done()
		return
	}
	e.workers.Interrupt(done)
}

// Abandon gives up the requests to rank workers that have not answered
// (Workers.Abandon); nil without workers.
func (e *Engine) Abandon() []string {
	if e.workers == nil {
		return nil
	}
	return e.workers.Abandon()
}

// WorkerStates returns the state of every rank worker process
// (Workers.States); nil when the ranks run in this process.
func (e *Engine) WorkerStates() []WorkerState {
	if e.workers == nil {
		return nil
	}
	return e.workers.States()
}

// WorkerReplacements returns, and forgets, the lines saying which rank
// workers were replaced since the last call (Workers.Replaced); nil when
// the ranks run in this process.
func (e *Engine) WorkerReplacements() []string {
	if e.workers == nil {
		return nil
	}
	return e.workers.Replaced()
}

// WorkerState is one rank worker process as the front knows it, read
// without waiting on the worker.
type WorkerState struct {
	Rank  int // tensor-parallel rank
	Stage int // pipeline stage (0 without --pp)
	PID   int // the process id the worker reported
	Host  string
	// State is "idle" (between passes), "running" (computing a step),
	// "at a stop", "stopped by a signal" (a spawned worker the OS shows
	// stopped: SIGSTOP, a debugger) or "failed".
	State string
	// Site is where a worker at a stop waits, or the last site it asked
	// about; "" when none.
	Site string
	// Reason is why a failed worker failed: its fault report (rank, host,
	// how it ended, its last stderr line, where it was).
	Reason string
}

// ErrWorker marks the failure of a rank worker process (it died, stopped
// answering, or its connection broke); errors.Is finds it in the errors of
// a step and in the panics of the stand-in device's queries.
var ErrWorker = fmt.Errorf("rank worker failed")

// WorkerRank makes an engine the share of one worker process
// (Options.Worker): only rank Rank of the --tp world is loaded, onto Dev,
// with Comm for the collectives.
type WorkerRank struct {
	Rank int
	Dev  backend.Device
	Comm backend.Comm
	// Pipe, when set, makes the rank one pipeline stage's (model.Pipe);
	// Options.Layers then selects the stage's layers.
	Pipe model.Pipe
}

// loadRemote builds the front's engine over opts.Workers: it loads
// nothing, taking the load report from the workers (rank 0's list of unused
// tensors).
func loadRemote(e *Engine, opts Options) (*Engine, error) {
	rs := opts.Workers.Ranks()
	if len(rs) != e.World {
		return nil, fmt.Errorf("%s: %d rank workers for a world of %d", e.Path, len(rs), e.World)
	}
	if err := opts.Workers.Bind(e.Tree); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Path, err)
	}
	e.workers = opts.Workers
	e.closers = append(e.closers, opts.Workers.Close)
	for r, rr := range rs {
		rep := rr.Report()
		e.Report.Bytes += rep.Bytes
		e.Report.Dequantized, e.Report.Formats = appendNewQuant(e.Report.Dequantized, e.Report.Formats, rep.Dequantized, rep.Formats)
		if rep.Format != "" {
			e.Report.Format = rep.Format
		}
		if r == 0 {
			e.Report.Unused = rep.Unused
		}
	}
	return e, nil
}

// RunStep runs step b on the one rank of a worker's engine (Options.Worker)
// with hook, whose Visit sees this rank's view alone; it returns the step's
// logits [rows, vocab] (f32) when logits is true (nil on a pipeline stage
// before the last). The batch comes from the
// front as it built it (engine/worker). Errors: as Prefill's.
func (e *Engine) RunStep(b *model.Batch, hook model.Hook, logits bool) (out *tensor.Tensor, err error) {
	if len(e.ranks) != 1 || e.workers != nil {
		return nil, fmt.Errorf("RunStep: not a worker's engine")
	}
	if err := b.Validate(e.Dims.Vocab); err != nil {
		return nil, err
	}
	rs := e.ranks[0]
	defer func() {
		if p := recover(); p != nil {
			err = rankError(rs.index, p)
		}
	}()
	pass := &model.Pass{Hook: hook, Batch: b, Faults: e.Faults}
	return e.forwardRank(rs, pass, b, logits), nil
}

// forwardRank runs b on local rank rs and returns its logits when logits
// is true; failures panic (the caller recovers them with rankError).
func (e *Engine) forwardRank(rs *rankState, pass *model.Pass, b *model.Batch, logits bool) *tensor.Tensor {
	r := &model.Rank{Index: rs.index, World: e.World, Dev: rs.dev, Comm: rs.comm, KV: rs.cache, Pass: pass, Pipe: rs.pipe}
	if u, ok := rs.dev.(scopeUnwinder); ok { // a stop or failure mid-step frees the step's activations
		depth := u.ScopeDepth()
		defer u.UnwindScopes(depth)
	}
	rs.dev.PushScope()
	out := rs.model.Forward(r, b)
	var res *tensor.Tensor
	if logits && out != nil { // nil: a pipeline stage before the last
		s := out.Shape()
		res = rs.dev.ToHost(out, 0, s[0], 0, tensor.Numel(s[1:]))
	}
	rs.dev.PopScope()
	return res
}
