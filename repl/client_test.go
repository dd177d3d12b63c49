package repl

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// stubClient is a client.Client with no model behind it: it records what
// the Term asks and answers with the plain values a test sets. A method it
// does not define panics (the embedded interface is nil), so a test also
// shows which calls a command makes across the seam.
type stubClient struct {
	client.Client
	batch   [][]int32
	stop    *client.Stop
	report  *client.TensorReport
	check   client.CheckReport
	calls   []string
	closed  bool
	traceFn func(client.TraceLine)
}

func (c *stubClient) call(format string, a ...any) {
	c.calls = append(c.calls, fmt.Sprintf(format, a...))
}

func (c *stubClient) OnTrace(fn func(client.TraceLine)) { c.traceFn = fn }
func (c *stubClient) Close() error                      { c.closed = true; return nil }
func (c *stubClient) SetBatch(seqs [][]int32) error {
	c.call("SetBatch %v", seqs)
	c.batch = seqs
	return nil
}
func (c *stubClient) Batch() ([][]int32, error)      { return c.batch, nil }
func (c *stubClient) Decode([]int32) (string, error) { return "", client.ErrNoTokenizer }
func (c *stubClient) Stopped() (*client.Stop, error) { return c.stop, nil }
func (c *stubClient) Run() (*client.Outcome, error) {
	c.call("Run")
	return &client.Outcome{Stop: c.stop}, nil
}
func (c *stubClient) Break(p, cond string, temp bool) (client.Breakpoint, error) {
	c.call("Break %q %q %v", p, cond, temp)
	return client.Breakpoint{ID: 1, Kind: "breakpoint", Pattern: p, Cond: cond, Enabled: true, Sites: 1}, nil
}
func (c *stubClient) Breakpoints() ([]client.Breakpoint, error) { return nil, nil }
func (c *stubClient) Print(name string, sl client.Slice) (*client.TensorReport, error) {
	c.call("Print %s rank=%d seq=%d tokens=%v", name, sl.Rank, sl.Seq, sl.Tokens)
	return c.report, nil
}
func (c *stubClient) Check(path string, req client.CheckRequest) (client.CheckReport, error) {
	c.call("Check %s layers=%v tp=%d seqlens=%v nomodel=%v", path, req.Layers, req.TP, req.SeqLens, req.NoModel)
	return c.check, nil
}

// TestTermOnStubClient runs a session's commands on a Term whose debugger
// is a stub (no model is loaded): the Term parses each command into the
// Client call a user means, and renders the plain results it gets back as
// the README shows them. The expected stop line and statistics are the
// README's example session (`input ids 1,403,407,261,378,365 ; ids
// 1,400,281,350`, `break layers.2`, `run`, `print stream`), typed in here
// as the stub's answers and the text they must produce.
func TestTermOnStubClient(t *testing.T) {
	zero := 0.0
	c := &stubClient{
		stop: &client.Stop{Site: "model.layers.2", Class: "LlamaDecoderLayer", Layer: 2, Step: 0, Tokens: 10,
			SeqLens: []int{6, 4}, Seqs: []int{0, 1}, Reasons: []string{"breakpoint 1"},
			Tensors: []string{"hidden_states", "residual", "stream"}},
		report: &client.TensorReport{Site: "model.layers.2", Tensor: "stream", Rows: client.Range{Lo: 0, Hi: 10}, Seq: -1,
			Ranks: []client.RankStats{{Rank: 1, Label: "1", Shape: []int{10, 64}, DType: "f32", Shard: "replicated",
				Stats: stats.Stats{Count: 640, Mean: -0.02368, Std: 1.075, Min: -4.574, Max: 4.688, AbsMax: 4.688, L2: 27.21}, DiffRank0: &zero}}},
		check: client.CheckReport{Path: "x.pt", Lines: []string{"x.pt: safetensors", "  pass  structure", "  verdict: valid"}, Files: 1},
	}
	buf := &bytes.Buffer{}
	f := &fakeTerm{Term: New(c, buf, Config{}), t: t, buf: buf}
	if c.traceFn == nil {
		t.Fatal("New did not subscribe to trace lines")
	}

	f.Exec("input ids 1,403,407,261,378,365 ; ids 1,400,281,350")
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 (LlamaDecoderLayer)  step 0 (prefill)  tokens 10 (seq 0: 6, seq 1: 4)  [breakpoint 1]",
		"tensors: hidden_states, residual, stream")
	f.AssertExec("print stream --rank 1",
		"rank  shape     dtype  shard           mean    std     min    max  absmax     l2  nan  inf  |Δ| vs rank0",
		"1     [10, 64]  f32    replicated  -0.02368  1.075  -4.574  4.688   4.688  27.21    0    0             0")
	f.AssertExec("check x.pt --layers 0,2 --no-model", "pass  structure", "  verdict: valid\n")
	f.Close()

	want := []string{
		"SetBatch [[1 403 407 261 378 365] [1 400 281 350]]",
		`Break "layers.2" "" false`,
		"Run",
		"Print stream rank=1 seq=-1 tokens=<nil>",
		"Check x.pt layers=[0 2] tp=0 seqlens=[] nomodel=true",
	}
	if !reflect.DeepEqual(c.calls, want) {
		t.Errorf("calls across the seam:\n%s\nwant\n%s", strings.Join(c.calls, "\n"), strings.Join(want, "\n"))
	}
	if !c.closed {
		t.Error("Close did not close the client")
	}
}
