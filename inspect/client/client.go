package client

import "context"

// Client is what a front end (repl/, cmd/hsdb) asks of the debugger: the
// seam between them, after delve's service.Client. Every argument and
// result is a plain value of this package (or of inspect/capture's
// manifest and job types, which are design.md's JSON formats), and every
// failure an error value, so that the seam can carry a process boundary
// (rank workers) without changing a front end. A *model.Tree, a hook, a
// tensor of a backend or an engine never crosses it.
//
// Two things still cross as Go functions and would become streamed
// events over a wire: the trace lines of OnTrace and the capture job's
// progress (JobRequest.Progress).
//
// debug.Local is the in-process implementation. Methods that run the model
// (Run, Continue, ..., Check with the model, Diff, CaptureJob) block until
// the pass stops or ends; Interrupt may be called from another goroutine
// meanwhile. A Client is used by one front end at a time.
type Client interface {
	// Model returns `info model`.
	Model() (ModelInfo, error)
	// FP8Tensors returns the names of the checkpoint tensors stored as fp8
	// (`info model --fp8`).
	FP8Tensors() ([]string, error)
	// QuantizedTensors returns every linear weight the checkpoint stores
	// quantized, with its format (`info model --quantized`).
	QuantizedTensors() ([]QuantTensor, error)
	// Layers returns `info layers`.
	Layers() ([]LayerInfo, error)
	// RankInfos returns `info ranks`.
	RankInfos() ([]RankInfo, error)
	// Memory returns `info memory`: device bytes per rank.
	Memory() ([]MemoryInfo, error)
	// Sites returns every site of the model in visit order (`info sites`).
	Sites() ([]SiteInfo, error)
	// ModuleTree returns the module tree under path ("" for all), in call
	// order (`tree`). Error: ErrNoSite.
	ModuleTree(path string) ([]TreeNode, error)

	// SetBatch sets the token batch of the next run: one id list per
	// sequence, flattened into one batch as vLLM does.
	SetBatch(seqs [][]int32) error
	// Batch returns the current batch (nil before SetBatch).
	Batch() ([][]int32, error)
	// Encode returns BOS followed by the tokenizer's ids of text. Errors:
	// ErrNoTokenizer, or the tokenizer's own.
	Encode(text string) ([]int32, error)
	// Decode returns the text of ids. Error: ErrNoTokenizer.
	Decode(ids []int32) (string, error)
	// ReadJSONL reads the token batch of a JSON-lines file on the
	// debugger's side, each line {"text": ...} or {"input_ids": [...]},
	// and notes on what the batch does not keep (rows' loss_mask).
	ReadJSONL(path string) ([][]int32, []string, error)

	// Run starts a prefill over the batch and runs it to the first stop or
	// to its end. Errors: ErrNoInput, or the engine's.
	Run() (*Outcome, error)
	// Gen runs n decode steps (see `gen`). Errors: n < 1, no completed
	// prefill to continue, a sequence that would pass
	// max_position_embeddings (naming it), or the engine's.
	Gen(n int) (*Outcome, error)
	// Continue resumes the stopped pass until the next stop or the end.
	// Error: ErrNotStopped when no pass is stopped.
	Continue() (*Outcome, error)
	// Step resumes until the next site, entering sub-modules. Error:
	// ErrNotStopped.
	Step() (*Outcome, error)
	// Next resumes until the next site at the same depth or shallower.
	// Error: ErrNotStopped.
	Next() (*Outcome, error)
	// Finish resumes until the enclosing module returns. Errors:
	// ErrNotStopped, or the stopped site is outermost.
	Finish() (*Outcome, error)
	// Until resumes until a site matching pattern (or a breakpoint).
	// Errors: ErrNoSite for a pattern matching no site, ErrNotStopped.
	Until(pattern string) (*Outcome, error)
	// Stopped returns the current stop, or nil when no pass is stopped.
	Stopped() (*Stop, error)
	// StepBatch returns the sequences of the stopped step's token batch,
	// in batch order, with their token ids. Error: ErrNotStopped.
	StepBatch() ([]StepSeq, error)
	// Interrupt asks the running pass to stop at its next site (Ctrl-C);
	// it reports whether a pass was running. Safe from any goroutine.
	Interrupt() bool
	// Abandon gives up the requests to rank workers that have not
	// answered (Ctrl-C while no pass runs: a query at a stop waiting on a
	// stopped worker). It returns a line per such worker (its rank, how
	// long it has been silent); one still silent a second later is ended
	// and reported as failed, and the command waiting on it fails with
	// that report. Safe from any goroutine; never blocks.
	Abandon() []string
	// Kill aborts a stopped pass (ErrKilled inside it); a no-op otherwise.
	Kill() error

	// Break adds a breakpoint at a site pattern with a condition ("" for
	// none), one-shot when temporary. Errors: ErrNoSite, ErrCond,
	// ErrNoTensor, ErrRank.
	Break(pattern, cond string, temporary bool) (Breakpoint, error)
	// Watch adds a watch: stop where cond on tensor becomes true.
	Watch(tensor, cond string) (Breakpoint, error)
	// Breakpoints lists the breakpoints and watches by id.
	Breakpoints() ([]Breakpoint, error)
	// Delete deletes breakpoints ids, or all of them when none is given.
	Delete(ids ...int) error
	// Enable enables (on) or disables breakpoints ids, or all.
	Enable(on bool, ids ...int) error
	// Condition replaces breakpoint or watch id's condition, as gdb's
	// `condition N COND`; "" makes a breakpoint unconditional. Errors: an
	// unknown id, ErrCond, ErrNoTensor, ErrRank.
	Condition(id int, cond string) error
	// Ignore makes breakpoint or watch id pass its next count crossings
	// that would stop (gdb's ignore). Errors: an unknown id, count < 0.
	Ignore(id, count int) error

	// Print returns the statistics of a tensor at the stop, per rank.
	// Errors: ErrNotStopped, ErrNoTensor, ErrRank, a bad slice.
	Print(name string, sl Slice) (*TensorReport, error)
	// Values returns the values idx selects of a tensor at the stop.
	Values(name string, idx Index, sl Slice) (*ValuesReport, error)
	// Hist returns a histogram of a tensor's finite values with bins bins.
	Hist(name string, bins int, sl Slice) (*HistReport, error)
	// Top returns the k channels of largest |value| of a tensor.
	Top(name string, k int, sl Slice) (*TopReport, error)
	// Ranks compares a tensor between every pair of ranks.
	Ranks(name string, sl Slice) (*RanksReport, error)
	// CheckTensor reports whether print would accept name and sl at the
	// stop, without computing anything (for `display`).
	CheckTensor(name string, sl Slice) error
	// Backtrace returns the call chain at the stop, innermost first: Level
	// 0 the stopped site, counting outward as gdb numbers frames.
	Backtrace() ([]Frame, error)
	// SetTrace turns tracing on or off: each site the pass visits is then
	// reported to the OnTrace function.
	SetTrace(on bool) error
	// Tracing reports whether tracing is on.
	Tracing() (bool, error)
	// OnTrace sets the function that receives trace lines while a pass
	// runs (called on the pass's goroutine, before the command returns);
	// nil drops them.
	OnTrace(fn func(TraceLine))

	// CaptureLayers records each pass's decoder layers (their output site,
	// what: stream, hidden_states or residual) for Dump.
	CaptureLayers(layers []int, what string) error
	// CaptureSite records a per-token tensor of a site for Dump.
	CaptureSite(site, tensor string) error
	// ClearCaptures forgets every capture and what was recorded.
	ClearCaptures() error
	// Captures returns what is captured and recorded so far (`capture
	// list`); the error says why the recording failed, if it did, with the
	// list filled all the same.
	Captures() (CaptureList, error)
	// Dump writes the recorded captures to dir as a validated dump and
	// returns its manifest (see `dump`).
	Dump(dir string, opts DumpRequest) (*Manifest, error)
	// Check validates the capture file or directory at path against this
	// model (`check`); its error is nil when the path was read at all.
	Check(path string, opts CheckRequest) (CheckReport, error)
	// Diff compares a capture with this model's forward pass layer by
	// layer (`diff`).
	Diff(path string, opts CheckRequest) (CheckReport, error)
	// CaptureJob runs `hsdb capture`: the layers of many sequences written
	// to a resumable dump. Canceling ctx stops it after the batch under way
	// (capture.ErrInterrupted).
	CaptureJob(ctx context.Context, req JobRequest) (*JobResult, error)

	// SetVar edits a tensor of the stopped site in place (`set var`); the
	// pass continues with the edited values. Errors: ErrNotStopped,
	// ErrNoTensor, ErrRank, ErrConsumed, a bad index or value; the pass is
	// untouched on error.
	SetVar(req EditRequest) (Edit, error)
	// Patch replaces a tensor of the stopped site (or arms the replacement
	// for the next run when req.Site is set) with a dump's. Errors: as
	// SetVar, the dump's (unreadable, no such tensor), ErrMismatch.
	Patch(req PatchRequest) (Edit, error)
	// Edits lists the edits of the current pass and the persistent and
	// armed ones (`info edits`).
	Edits() ([]Edit, error)
	// DeleteEdits forgets edits ids (all when none is given); values
	// already written stay written.
	DeleteEdits(ids ...int) error
	// Lens applies the final norm and lm_head to the stopped layer's
	// stream: each sequence's top k tokens (`lens`).
	Lens(k int) (*LensReport, error)
	// AttnProbs recomputes the attention probabilities of one head and
	// sequence at the stopped attention site. Errors: ErrNotStopped, no
	// attention at the site, ErrHead, a sequence not starting at position 0
	// in this step.
	AttnProbs(head, seq int) (*AttnReport, error)
	// Save writes a tensor at the stop to a .safetensors or .npy file (f32;
	// gathered over the ranks, or sl.Rank's); an existing file is replaced
	// only with force. Errors: as Print, a path of another extension, an
	// existing file without force, the file system's.
	Save(name, path string, sl Slice, force bool) (*SaveReport, error)
	// SelectFrame makes the tensor queries look at `bt` level level (gdb's
	// numbering): 0 the stopped site, N ≥ 1 the module N levels out, whose
	// tensors are its inputs; Outputs of the result name them. Reset at
	// every stop. Errors: ErrNotStopped, a level out of range.
	SelectFrame(level int) (Frame, error)
	// CurrentFrame returns the frame the queries look at.
	CurrentFrame() (Frame, error)
	// Compare compares the stop's tensors with those a dump of the same
	// inputs holds for the site (`compare`).
	Compare(dump string) (*CompareReport, error)

	// Inject adds a fault to every following pass (`inject`): a
	// computation fault the engine's blocks consult, or a fault on what
	// captures record. Errors: an unknown kind, a bad rank or site.
	Inject(f Fault) error
	// ClearFaults removes every injected fault (`inject clear`).
	ClearFaults() error
	// Faults lists the injected faults (`info inject`).
	Faults() ([]Fault, error)

	// Close ends the session: a stopped pass is aborted.
	Close() error
}
