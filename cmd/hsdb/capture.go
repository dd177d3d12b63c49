package main

import (
	"context"
	"errors"
	"flag"
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
		usage:   "capture [--model PATH] [--tp N] --layers 2,30,58,60 [--what stream|hidden_states|residual] (--ids \"1,2,3;4,5\" | --data F.jsonl) --out DIR [--max-batch-tokens T] [--save-dtype f32|bf16|f16] [--force]",
		summary: "export the hidden states of chosen layers for many sequences as a validated dump (resumable)",
		run:     runCapture})
}

// registerModelFlagsExcept registers the model flags on fs but those named
// (a subcommand that gives the name another meaning).
func registerModelFlagsExcept(fs *flag.FlagSet, mf *modelFlags, except ...string) {
	all := flag.NewFlagSet("model", flag.ContinueOnError)
	mf.register(all)
	all.VisitAll(func(f *flag.Flag) {
		for _, x := range except {
			if f.Name == x {
				return
			}
		}
		fs.Var(f.Value, f.Name, f.Usage)
	})
}

// captureAfterBatch, when set by a test, is called after each batch is
// written (to stop the process midway); nil in normal use.
var captureAfterBatch func(done int)

func runCapture(args []string, io stdio) int {
	fs := flag.NewFlagSet("capture", flag.ContinueOnError)
	fs.SetOutput(io.Err)
	var mf modelFlags
	registerModelFlagsExcept(fs, &mf, "layers") // --layers here names the captured layers
	layersArg := fs.String("layers", "", "decoder layers to capture, e.g. 2,30,58,60 (EAGLE-3: 2, N/2, N-3)")
	what := fs.String("what", "stream", "stream (hidden_states + residual = HF output_hidden_states[i+1]), hidden_states or residual")
	ids := fs.String("ids", "", `token ids: sequences separated by ';', e.g. "1,2,3;4,5"`)
	data := fs.String("data", "", `JSONL input: {"input_ids": [...], "loss_mask": [...]} or {"text": "..."} per line, optional "id"`)
	out := fs.String("out", "", "dump directory (written as DIR.partial until complete)")
	maxTok := fs.Int("max-batch-tokens", 4096, "tokens per forward pass: sequences are packed into flattened batches up to this size")
	saveDType := fs.String("save-dtype", "", "dtype of the hidden states in the files: f32, bf16 or f16 (default: the model's)")
	force := fs.Bool("force", false, "replace an existing dump, or another job's DIR.partial")
	if err := fs.Parse(args); err != nil {
		return 2
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
		in, err = capture.ParseIDsList(*ids)
	} else {
		tok, _ := e.Tokenizer()
		in, err = capture.ReadJSONL(*data, tok)
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
	prog.finish()
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
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("capture"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("seq"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionFullWidth())
	}
	return p
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

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
