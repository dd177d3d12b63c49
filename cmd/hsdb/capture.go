package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
)

func init() {
	register(&subcommand{name: "capture",
		usage:   captureUsage,
		summary: "export the hidden states of chosen layers for many sequences as a validated dump (resumable)",
		run:     runCapture})
}

// captureAfterBatch, when set by a test, is called after each batch is
// written (to stop the process midway); nil in normal use.
var captureAfterBatch func(done int)

const captureUsage = "capture [--model PATH] [--tp N] --layers 2,30,58,60 [--what stream|hidden_states|residual] (--ids \"1,2,3;4,5\" | --data F.jsonl) --out DIR [--max-batch-tokens T] [--save-dtype f32|bf16|f16] [--force] [--json]"

func runCapture(args []string, io stdio) int {
	fs := newFlagSet("capture", io)
	var mf modelFlags
	mf.register(fs, "layers", "json")
	layersArg := &mf.layers
	what := fs.String("what", "stream", "stream (hidden_states + residual = HF output_hidden_states[i+1]), hidden_states or residual")
	ids := fs.String("ids", "", `token ids: sequences separated by ';', e.g. "1,2,3;4,5"`)
	data := fs.String("data", "", `JSONL input: {"input_ids": [...], "loss_mask": [...]} or {"text": "..."} per line, optional "id"`)
	out := fs.String("out", "", "dump directory (written as DIR.partial until complete)")
	maxTok := fs.Int("max-batch-tokens", 4096, "tokens per forward pass: sequences are packed into flattened batches up to this size")
	saveDType := fs.String("save-dtype", "", "dtype of the hidden states in the files: f32, bf16 or f16 (default: the model's)")
	force := fs.Bool("force", false, "replace an existing dump, or another job's DIR.partial (only what hsdb wrote: its manifest proves it)")
	if done, code := parseArgs(fs, args, io, captureUsage); done {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(io.Err, "hsdb capture: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	if *layersArg == "" || *out == "" || (*ids == "") == (*data == "") {
		return fail(2, "need --layers, --out and one of --ids or --data (see hsdb help)")
	}
	layers, err := client.ParseLayers(*layersArg)
	if err != nil {
		return fail(2, "--layers: %v", err)
	}
	if _, err := capture.ParseWhat(*what); err != nil {
		return fail(2, "%v", err)
	}
	if *saveDType != "" {
		if dt, err := tensor.ParseDType(*saveDType); err != nil || (dt != tensor.F32 && dt != tensor.BF16 && dt != tensor.F16) {
			return fail(2, "--save-dtype %q: want f32, bf16 or f16", *saveDType)
		}
	}
	e, err := mf.load(io.Err)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer e.Close()
	var in *capture.Inputs
	if *ids != "" {
		in, err = capture.ParseIDsList(*ids, capture.LimitsOf(e.Dims))
	} else {
		tok, _ := e.Tokenizer()
		in, err = capture.ReadJSONL(*data, tok, capture.LimitsOf(e.Dims))
	}
	if err != nil {
		return fail(2, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := newProgress(io.Err, len(in.Seqs))
	c := hsdbg.NewLocal(hsdbg.New(e))
	defer c.Close()
	res, err := c.CaptureJob(ctx, client.JobRequest{Layers: layers, What: *what, Inputs: in, Out: *out, Force: *force, DType: *saveDType,
		MaxBatchTokens: *maxTok, Progress: prog.update, AfterBatch: captureAfterBatch})
	prog.finish(err == nil)
	if mf.json {
		return captureJSON(io, *out, res, err)
	}
	if res != nil {
		fmt.Fprintln(io.Out, throughput(res.JobProgress))
	}
	if err != nil {
		if errors.Is(err, capture.ErrInterrupted) {
			return fail(130, "%v", err)
		}
		return fail(1, "%v", err)
	}
	m := res.Manifest
	fmt.Fprintf(io.Out, "dump %s: %d sequences, layers %v (%s), %s, model %s (tp %d)\n", *out, len(m.Sequences), m.Capture.Layers, m.Capture.What, m.Capture.DType, m.Model.Path, m.Model.WorldSize)
	fmt.Fprintln(io.Out, "validation:")
	for _, v := range m.Validation {
		fmt.Fprintf(io.Out, "  %-4s  %-16s  %s\n", v.Status, v.Rule, v.Detail)
	}
	return 0
}

// throughput is the job's summary line: sequences and tokens per second
// over the forward passes this process ran.
func throughput(p capture.JobProgress) string {
	secs := p.Elapsed.Seconds()
	ran := p.Done - p.Skipped
	s := fmt.Sprintf("captured %d of %d sequences (%d skipped, already validated), %d tokens in %.2fs", ran, p.Total, p.Skipped, p.Tokens, secs)
	if secs > 0 && ran > 0 {
		s += fmt.Sprintf(": %.1f sequences/s, %.0f tokens/s", float64(ran)/secs, float64(p.Tokens)/secs)
	}
	return s
}

// progress shows a batch job's progress: a progress bar
// (github.com/schollz/progressbar) on a terminal, one plain line per
// batch otherwise (logs, pipes, tests).
type progress struct {
	w    io.Writer
	bar  *progressbar.ProgressBar
	last time.Time
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = newBar(w, total)
	}
	return p
}

func newBar(w io.Writer, total int) *progressbar.ProgressBar {
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("capture"),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("seq"),
		progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionFullWidth())
}

func (p *progress) update(s capture.JobProgress) {
	secs := s.Elapsed.Seconds()
	var tps float64
	if secs > 0 {
		tps = float64(s.Tokens) / secs
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("capture (%.0f tokens/s)", tps))
		p.bar.Set(s.Done)
		return
	}
	if s.Done == s.Total || time.Since(p.last) >= time.Second || s.Done == s.Skipped {
		p.last = time.Now()
		ran := s.Done - s.Skipped
		var sps float64
		if secs > 0 {
			sps = float64(ran) / secs
		}
		fmt.Fprintf(p.w, "capture: %d/%d sequences, %d tokens, %.1f sequences/s, %.0f tokens/s\n", s.Done, s.Total, s.Tokens, sps, tps)
	}
}

// finish ends the bar: filled when the job completed, left where it
// stopped otherwise (Ctrl-C, an error), so that it never shows 100 % for
// a job that did not finish.
func (p *progress) finish(completed bool) {
	if p.bar != nil {
		if completed {
			p.bar.Finish()
		} else {
			p.bar.Exit()
		}
		fmt.Fprintln(p.w)
	}
}

// captureResult is `hsdb capture --json`'s one object (snake_case, as
// every JSON result of hsdb).
type captureResult struct {
	Command    string                     `json:"command"`
	Out        string                     `json:"out"`
	Error      string                     `json:"error,omitempty"`
	Exit       int                        `json:"exit"`
	Captured   int                        `json:"captured"`
	Skipped    int                        `json:"skipped"`
	Total      int                        `json:"total"`
	Tokens     int64                      `json:"tokens"`
	Seconds    float64                    `json:"seconds"`
	Sequences  int                        `json:"sequences,omitempty"`
	Layers     []int                      `json:"layers,omitempty"`
	What       string                     `json:"what,omitempty"`
	DType      string                     `json:"dtype,omitempty"`
	Validation []capture.ValidationRecord `json:"validation,omitempty"`
}

// captureJSON prints the job's result (or its error) as one JSON object
// on stdout and returns the exit status: 0, 1 failed, 130 interrupted.
func captureJSON(io stdio, out string, res *capture.JobResult, err error) int {
	r := captureResult{Command: "capture", Out: out}
	if res != nil {
		r.Captured, r.Skipped, r.Total, r.Tokens, r.Seconds = res.Done-res.Skipped, res.Skipped, res.Total, res.Tokens, res.Elapsed.Seconds()
		if m := res.Manifest; m != nil && err == nil {
			r.Sequences, r.Layers, r.What, r.DType, r.Validation = len(m.Sequences), m.Capture.Layers, m.Capture.What, m.Capture.DType, m.Validation
		}
	}
	if err != nil {
		r.Error, r.Exit = err.Error(), 1
		if errors.Is(err, capture.ErrInterrupted) {
			r.Exit = 130
		}
	}
	b, _ := json.Marshal(r)
	fmt.Fprintln(io.Out, string(b))
	return r.Exit
}
