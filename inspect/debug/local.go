package debug

import (
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// Local is the in-process client.Client: a Session over the engine it
// holds, with the session's captures (a capture.Capturer subscribed to
// every pass on first use), dumps, and checks, diffs and capture jobs that
// run this engine's forward pass. Front ends hold it as a client.Client;
// only the code that loads the model (cmd/hsdb, tests) sees the Session.
type Local struct {
	s    *Session
	capt *capture.Capturer // nil until the first capture command
}

var _ client.Client = (*Local)(nil)

// NewLocal returns the client of s. s must not be used directly while the
// client is in use (tests read it between commands).
func NewLocal(s *Session) *Local { return &Local{s: s} }

// Model returns `info model`.
func (l *Local) Model() (client.ModelInfo, error) { return l.s.Model(), nil }

// FP8Tensors returns the checkpoint tensors stored as fp8.
func (l *Local) FP8Tensors() ([]string, error) { return l.s.FP8Tensors(), nil }

// QuantizedTensors returns every checkpoint weight stored quantized.
func (l *Local) QuantizedTensors() ([]client.QuantTensor, error) { return l.s.QuantizedTensors(), nil }

// Layers returns `info layers`.
func (l *Local) Layers() ([]client.LayerInfo, error) { return l.s.Layers(), nil }

// RankInfos returns `info ranks`.
func (l *Local) RankInfos() ([]client.RankInfo, error) { return l.s.RankInfos(), nil }

// Memory returns `info memory`.
func (l *Local) Memory() ([]client.MemoryInfo, error) { return l.s.Memory(), nil }

// Sites returns every site in visit order.
func (l *Local) Sites() ([]client.SiteInfo, error) { return l.s.Sites(), nil }

// ModuleTree returns the module tree under path.
func (l *Local) ModuleTree(path string) ([]client.TreeNode, error) { return l.s.ModuleTree(path) }

// SetBatch sets the token batch of the next run.
func (l *Local) SetBatch(seqs [][]int32) error { return l.s.SetBatch(seqs) }

// Batch returns the current batch.
func (l *Local) Batch() ([][]int32, error) { return l.s.Batch(), nil }

// Encode returns BOS and the tokenizer's ids of text.
func (l *Local) Encode(text string) ([]int32, error) { return l.s.Encode(text) }

// Decode returns the text of ids; client.ErrNoTokenizer without a
// tokenizer.
func (l *Local) Decode(ids []int32) (string, error) {
	if l.s.Tok == nil {
		return "", client.ErrNoTokenizer
	}
	return l.s.Decode(ids), nil
}

// ReadJSONL reads a batch from a JSON-lines file, with notes on what of
// it the batch does not keep.
func (l *Local) ReadJSONL(path string) ([][]int32, []string, error) { return l.s.ReadJSONL(path) }

// Run starts a prefill over the batch.
func (l *Local) Run() (*client.Outcome, error) { return l.s.Run() }

// Gen runs n decode steps.
func (l *Local) Gen(n int) (*client.Outcome, error) { return l.s.Gen(n) }

// Continue resumes the stopped pass.
func (l *Local) Continue() (*client.Outcome, error) { return l.s.Continue() }

// Step resumes until the next site.
func (l *Local) Step() (*client.Outcome, error) { return l.s.Step() }

// Next resumes until the next site at the same depth or shallower.
func (l *Local) Next() (*client.Outcome, error) { return l.s.Next() }

// Finish resumes until the enclosing module returns.
func (l *Local) Finish() (*client.Outcome, error) { return l.s.Finish() }

// Until resumes until a site matching pattern.
func (l *Local) Until(pattern string) (*client.Outcome, error) { return l.s.Until(pattern) }

// Stopped returns the current stop, or nil.
func (l *Local) Stopped() (*client.Stop, error) { return l.s.Stopped(), nil }

// StepBatch returns the sequences of the stopped step with their ids.
func (l *Local) StepBatch() ([]client.StepSeq, error) { return l.s.StepBatch() }

// Interrupt asks the running pass to stop at its next site.
func (l *Local) Interrupt() bool { return l.s.Interrupt() }

// Abandon gives up the requests to workers that have not answered.
func (l *Local) Abandon() []string { return l.s.E.Abandon() }

// Kill aborts a stopped pass.
func (l *Local) Kill() error { l.s.Kill(); return nil }

// Close aborts a stopped pass; the engine stays with its owner.
func (l *Local) Close() error { l.s.Kill(); return nil }

// Break adds a breakpoint.
func (l *Local) Break(pattern, cond string, temporary bool) (client.Breakpoint, error) {
	b, err := l.s.Break(pattern, cond, temporary)
	if err != nil {
		return client.Breakpoint{}, err
	}
	return b.Breakpoint, nil
}

// Watch adds a watch.
func (l *Local) Watch(tensor, cond string) (client.Breakpoint, error) {
	b, err := l.s.Watch(tensor, cond)
	if err != nil {
		return client.Breakpoint{}, err
	}
	return b.Breakpoint, nil
}

// Breakpoints lists the breakpoints and watches.
func (l *Local) Breakpoints() ([]client.Breakpoint, error) {
	bps := l.s.Breakpoints()
	out := make([]client.Breakpoint, len(bps))
	for i := range bps {
		out[i] = bps[i].Breakpoint
	}
	return out, nil
}

// Delete deletes breakpoints.
func (l *Local) Delete(ids ...int) error { return l.s.Delete(ids...) }

// Enable enables or disables breakpoints.
func (l *Local) Enable(on bool, ids ...int) error { return l.s.Enable(on, ids...) }

// Condition replaces breakpoint id's condition ("" for none).
func (l *Local) Condition(id int, cond string) error { return l.s.Condition(id, cond) }

// Ignore passes breakpoint id's next count crossings.
func (l *Local) Ignore(id, count int) error { return l.s.Ignore(id, count) }

// Print returns a tensor's statistics at the stop.
func (l *Local) Print(name string, sl client.Slice) (*client.TensorReport, error) {
	return l.s.Print(name, sl)
}

// Values returns values of a tensor at the stop.
func (l *Local) Values(name string, idx client.Index, sl client.Slice) (*client.ValuesReport, error) {
	return l.s.Values(name, idx, sl)
}

// Hist returns a histogram of a tensor at the stop.
func (l *Local) Hist(name string, bins int, sl client.Slice) (*client.HistReport, error) {
	return l.s.Hist(name, bins, sl)
}

// Top returns the channels of largest |value| of a tensor at the stop.
func (l *Local) Top(name string, k int, sl client.Slice) (*client.TopReport, error) {
	return l.s.Top(name, k, sl)
}

// Ranks compares a tensor between ranks at the stop.
func (l *Local) Ranks(name string, sl client.Slice) (*client.RanksReport, error) {
	return l.s.Ranks(name, sl)
}

// CheckTensor reports whether print would accept name and sl.
func (l *Local) CheckTensor(name string, sl client.Slice) error { return l.s.CheckTensor(name, sl) }

// Backtrace returns the call chain at the stop.
func (l *Local) Backtrace() ([]client.Frame, error) { return l.s.Backtrace() }

// SetTrace turns tracing on or off.
func (l *Local) SetTrace(on bool) error { l.s.SetTrace(on); return nil }

// Tracing reports whether tracing is on.
func (l *Local) Tracing() (bool, error) { return l.s.Tracing(), nil }

// OnTrace sets the receiver of trace lines.
func (l *Local) OnTrace(fn func(client.TraceLine)) { l.s.OnTrace = fn }

// Inject adds a fault to every following pass.
func (l *Local) Inject(f client.Fault) error {
	l.capturer() // subscribed first, so that recording faults reach it
	return l.s.Inject(f)
}

// ClearFaults removes every injected fault.
func (l *Local) ClearFaults() error { l.s.ClearFaults(); return nil }

// Faults lists the injected faults.
func (l *Local) Faults() ([]client.Fault, error) { return l.s.Faults(), nil }
