package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"hsdb/engine"
	"hsdb/engine/bytesize"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
	"hsdb/engine/tokenizer"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
	"hsdb/inspect/plural"
)

func init() {
	register(&subcommand{name: "capture",
		usage:   captureUsage,
		summary: "export the hidden states of chosen layers for many sequences as validated files: hsdb's dump, or speculators' / SpecForge's training samples (resumable)",
		run:     runCapture})
}

// captureAfterBatch, when set by a test, is called after each batch is
// written (to stop the process midway); nil in normal use.
var captureAfterBatch func(done int)

const captureUsage = "capture [--model PATH] [--tp N] [--ep] [--format hsdb|speculators|specforge] [--layers eagle3|IDS] [--what stream|hidden_states|residual] (--ids \"1,2,3;4,5\" | --data F.jsonl) --out DIR [--max-batch-tokens T] [--save-dtype f32|bf16|f16] [--compress] [--writers N] [--prefill-baseline N] [--force] [--json]"

func runCapture(args []string, io stdio) int {
	fs := newFlagSet("capture")
	var mf modelFlags
	mf.register(fs, "layers", "json")
	layersArg := &mf.layers
	what := fs.String("what", "stream", "stream (hidden_states + residual = HF output_hidden_states[i+1]), hidden_states or residual (vLLM's un-summed halves: --format hsdb only, the trainer formats hold the stream)")
	ids := fs.String("ids", "", `token ids: sequences separated by ';', e.g. "1,2,3;4,5"`)
	data := fs.String("data", "", `JSONL input: {"input_ids": [...], "loss_mask": [...]} or {"text": "..."} per line, optional "id"`)
	out := fs.String("out", "", "dump directory (written as DIR.partial until complete; missing parent directories are made). "+
		"The same command again resumes DIR.partial, or, on a finished DIR of the same job, verifies every file against its manifest and each sequence against its input row, and says it is already complete and valid (exit 0, nothing rewritten). "+
		"A DIR.partial or DIR captured at another --tp, --device, --dtype or --ep is not resumed: hsdb does not mix them in one dump, since the hidden states differ by rounding between them (the all-reduced sums are split and ordered by tp, and rounded in bf16); rerun with its settings, or --force to start over")
	maxTok := fs.Int("max-batch-tokens", 4096, "tokens per forward pass: sequences are packed in input order into flattened batches up to this size; a longer sequence runs alone, in a pass of its own length")
	saveDType := fs.String("save-dtype", "", "dtype of the hidden states in the files: f32, bf16 or f16, or PyTorch's names (float32, bfloat16, float16, torch.bfloat16, ...) as dump --dtype takes them (default: bf16 for speculators and specforge, as their trainers read them; the model's for hsdb)")
	formatArg := fs.String("format", "hsdb", "files to write: hsdb (manifest + seq_N.safetensors), speculators (hs_{idx}.safetensors) or specforge (rows_*/data_{idx}.ckpt); --layers is then in that format's ids (hsdb: decoder layer outputs 0..L-1; speculators: residual-stream positions 0..L, 0 = embeddings; specforge: exactly three SGLang ids in 0..L-1, as SpecForge trains on three), eagle3 (the default) for its EAGLE-3 ids")
	compress := fs.Bool("compress", false, "gzip SpecForge samples (data_{idx}.ckpt.gz)")
	writers := fs.Int("writers", 8, "sequence files written and validated at once, while the next batch runs")
	baseline := fs.Int("prefill-baseline", 0, "before the job, time this many forward passes of its first batch without capturing or writing, and report the job's end-to-end tokens/s against them")
	force := fs.Bool("force", false, "replace an existing dump, or another job's DIR.partial (only what hsdb wrote: its manifest proves it)")
	fail := func(code int, format string, a ...any) int {
		if mf.json { // the keys of captureJSON's object, as a failed job's
			b, _ := json.Marshal(captureResult{Command: "capture", Out: *out, Error: client.ClipMessage(fmt.Sprintf(format, a...)), Exit: code, Notes: []string{}}) // notes [] as a finished job's, not null
			fmt.Fprintln(io.Out, string(b))
			return code
		}
		fmt.Fprintf(io.Err, "hsdb capture: %s\n", errText(fmt.Sprintf(format, a...)))
		return code
	}
	// A bad flag under --json (given before or after it) is the same
	// object as every other failure; the command ends there.
	failJSON := func(code int, msg string) int { mf.json = true; return fail(code, "%s", msg) }
	if done, code := parseArgsJSON(fs, args, io, captureUsage, failJSON); done {
		return code
	}
	if fs.NArg() > 0 {
		mf.json = mf.json || jsonAsked(fs, args) // capture extra --json: the parse stopped before --json
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	if *out != "" && *ids != "" && *data != "" { // "need --out and one of" named neither fault
		return fail(2, "--ids and --data both given: the input is one of them (hsdb capture --help lists the flags)")
	}
	if *out == "" || (*ids == "") == (*data == "") {
		return fail(2, "need --out and one of --ids or --data (hsdb capture --help lists the flags)")
	}
	if err := mf.validate(); err != nil {
		return fail(2, "%v", err)
	}
	if *data != "" { // a --data that cannot be read is a usage error, said before any model file is read (its rows are read below)
		f, err := regfile.Open(*data)
		if err != nil {
			return fail(2, "--data: %v", err)
		}
		f.Close()
	}
	format, err := capture.ParseFormat(*formatArg)
	if err != nil {
		return fail(2, "%v", err)
	}
	w, err := capture.ParseWhat(*what)
	if err == nil {
		err = capture.CheckWhat(format, w) // known before the model loads, as --out and --layers are
	}
	if err != nil {
		return fail(2, "%v", err)
	}
	if *compress && format != capture.FormatSpecForge {
		return fail(2, "--compress: %s files have no compressed form their trainer reads (only specforge's .ckpt.gz)", format)
	}
	if *maxTok < 1 {
		return fail(2, "--max-batch-tokens %d: want at least 1 token per forward pass", *maxTok)
	}
	if *baseline < 0 {
		// It was taken as 0: no baseline, without a word.
		return fail(2, "--prefill-baseline %d: want a number of timed forward passes (0: none)", *baseline)
	}
	if *writers < 1 || *writers > capture.MaxWriters {
		return fail(2, "--writers %d: want 1 to %d files in flight", *writers, capture.MaxWriters)
	}
	if *saveDType != "" {
		if _, err := tensor.ParseFloatDType(*saveDType); err != nil {
			return fail(2, "--save-dtype %v", err)
		}
	}
	// What --out holds is known before the model loads (the job checks it
	// again under the dump's lock). A dump hsdb wrote goes on to the job
	// without --force: the same job, finished before, is verified and
	// reported complete, another job refused with the reason; telling them
	// apart needs the loaded model's identity.
	if err := capture.CheckOut(*out, *force); err != nil && !(errors.Is(err, capture.ErrExists) && !errors.Is(err, capture.ErrNotDump)) {
		return fail(1, "%v", err)
	}
	if err := mf.validateModelPath(); err != nil {
		return fail(2, "%v", err)
	}
	if err := mf.checkFit(); err != nil { // --tp, --load-layers, --ep, --pp the model rules out: usage, before the load
		return fail(2, "%v", err)
	}
	// --layers is known before the load too, on the config's
	// num_hidden_layers (the same plan is made again from the loaded
	// model; a config that cannot be read here is left for the load to
	// name). A llama2.c .bin's config is its header: ConfigDims reads no
	// weight, so the load reads the file once.
	// A --load-layers range the plan cannot be recorded from (not from
	// layer 0, short of a captured layer or, for SpecForge's hidden_state,
	// of the last layer) is refused here too, as the Capturer would after
	// the load.
	cfgDims, cfgErr := modelpath.ConfigDims(mf.model)
	if cfgErr == nil && cfgDims.Layers > 0 {
		p, err := capture.PlanLayers(format, *layersArg, cfgDims.Layers, client.ParseLayers)
		if err == nil {
			if o, _ := mf.options(); o.Layers != nil {
				err = capture.LoadRangeFits(p, *o.Layers, cfgDims.Layers)
			}
		}
		if err != nil {
			return fail(2, "%v", err)
		}
	}
	// --ids and --data are read and checked against the model's limits
	// (vocab_size, max_position_embeddings) before the load where
	// the config gives them (a llama2.c .bin's header does), so a bad row
	// is said before a load of minutes; otherwise (a config that cannot be
	// read, which the load then names) after it.
	readInputs := func(d *model.Dims, tok func() (tokenizer.Tokenizer, error)) (*capture.Inputs, error) {
		if *ids != "" {
			return capture.ParseIDsList(*ids, capture.LimitsOf(d))
		}
		t, tokErr := tok()
		in, err := capture.OpenJSONL(*data, t, capture.LimitsOf(d))  // validated here, streamed by the job
		if errors.Is(err, capture.ErrNoTokenizer) && tokErr != nil { // why there is none, as input text says
			err = fmt.Errorf("%w: %v; give input_ids rows instead", err, tokErr)
		}
		return in, err
	}
	var in *capture.Inputs
	if cfgErr == nil {
		if in, err = readInputs(cfgDims, func() (tokenizer.Tokenizer, error) { return engine.FindTokenizer(mf.model, cfgDims.Vocab) }); err != nil {
			return fail(2, "%v", err)
		}
	}
	e, err := mf.load(io.Err)
	if err != nil {
		return fail(loadExit(err), "%v", err)
	}
	defer e.Close()
	if in == nil {
		if in, err = readInputs(e.Dims, e.Tokenizer); err != nil {
			return fail(2, "%v", err)
		}
	}
	plan, err := capture.PlanLayers(format, *layersArg, e.Dims.Layers, client.ParseLayers)
	if err != nil {
		return fail(2, "%v", err)
	}
	// notes say what the files hold where a user would assume otherwise:
	// printed before the job, and in --json's "notes".
	var notes []string
	if n := capture.Eagle3AuxNote(format, plan.IDs); n != "" {
		if format == capture.FormatSpeculators { // how, here: --layers (the REPL's way is its own)
			n += "; --layers takes them in speculators' ids, eagle3 being 2, N/2, N-3, N"
		}
		notes = append(notes, n)
	}
	if format == capture.FormatSpeculators && in.Masked > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d rows of %s have a loss_mask, which speculators files do not hold (hidden_states and token_ids only): speculators' trainer takes loss_mask from its preprocessed dataset, sample idx = row idx (hs_{idx}.safetensors)", in.Masked, in.Len(), *data))
	}
	if n := in.Len() - in.Masked; format == capture.FormatSpecForge && n > 0 {
		notes = append(notes, fmt.Sprintf("no loss_mask in %d of %d sequences: their SpecForge samples get loss_mask all 1, so the draft trains on every token (prompt included); give --data rows a \"loss_mask\" to train on the answers only", n, in.Len()))
	}
	if n := whatNote(*what); n != "" && format == capture.FormatHsdb {
		notes = append(notes, n)
	}
	if !mf.json {
		for _, l := range plan.Lines {
			fmt.Fprintln(io.Out, l)
		}
		for _, n := range notes {
			fmt.Fprintln(io.Out, "note: "+n)
		}
	}
	var baseTPS float64
	if *baseline > 0 {
		if baseTPS, err = prefillBaseline(e, in, *maxTok, *baseline); err != nil {
			return fail(1, "--prefill-baseline: %v", err)
		}
		if !mf.json {
			fmt.Fprintf(io.Out, "prefill baseline: %.0f tokens/s (%d passes of the first batch, no capture, no files)\n", baseTPS, *baseline)
		}
	}
	ctx, stop := interruptible(io.Err, *out)
	defer stop()
	prog := newProgress(io.Err, in.Len())
	c := hsdbg.NewLocal(hsdbg.New(e))
	defer c.Close()
	res, err := c.CaptureJob(ctx, client.JobRequest{Plan: plan, What: *what, Inputs: in, Out: *out, Force: *force, DType: *saveDType,
		MaxBatchTokens: *maxTok, Progress: prog.update, AfterBatch: captureAfterBatch, Compress: *compress, Writers: *writers})
	prog.finish(err == nil)
	if mf.json {
		return captureJSON(io, *out, res, notes, err)
	}
	if res != nil && res.Complete {
		fmt.Fprintf(io.Out, "dump %s: already complete and valid: the same job, %s verified against the manifest (every tensor's sha256); nothing was captured or rewritten\n",
			*out, plural.N(len(res.Manifest.Sequences), "file"))
	} else if res != nil {
		for _, n := range res.Recaptured {
			fmt.Fprintf(io.Err, "hsdb capture: note: %s\n", errText(n))
		}
		fmt.Fprintln(io.Out, throughput(res.JobProgress))
		if secs := res.Elapsed.Seconds(); baseTPS > 0 && secs > 0 && res.Tokens > 0 {
			fmt.Fprintf(io.Out, "end-to-end %.0f tokens/s = %.1f%% of the prefill baseline %.0f tokens/s\n", float64(res.Tokens)/secs, 100*float64(res.Tokens)/secs/baseTPS, baseTPS)
		}
	}
	if err != nil {
		if errors.Is(err, capture.ErrInterrupted) {
			return fail(130, "%v", err)
		}
		return fail(1, "%v", err)
	}
	// A finished dump's manifest is the file's, as read (res.Complete):
	// its strings are quoted as a file's (capture.FileText), its lines
	// kept to one each and bounded.
	m := res.Manifest
	ft := capture.FileText
	if format == capture.FormatHsdb {
		fmt.Fprintf(io.Out, "dump %s: %s, layers %s (%s), %s, model %s (tp %d)\n", *out, plural.N(m.Summary.Sequences, "sequence"), ft(commaInts(m.Capture.Layers)), ft(m.Capture.What), ft(m.Capture.DTypeName()), ft(m.Model.Path), m.Model.WorldSize)
	} else {
		fmt.Fprintf(io.Out, "%s %s: %s, %s ids %s (%s), %s, model %s (tp %d); manifest.json is hsdb's sidecar (the trainer ignores it)\n", format, *out, plural.N(m.Summary.Sequences, "sample"), format, ft(commaInts(m.Capture.FormatIDs)), ft(m.Capture.Sources()), ft(m.Capture.DTypeName()), ft(m.Model.Path), m.Model.WorldSize)
	}
	if !res.Complete { // bytes per token are this process's writing
		fmt.Fprintln(io.Out, diskLine(res.JobProgress, m))
	}
	fmt.Fprintln(io.Out, "validation:")
	for i, v := range m.Validation {
		if i == maxValidationLines {
			fmt.Fprintf(io.Out, "  and %d more entries in %s\n", len(m.Validation)-i, filepath.Join(*out, capture.ManifestName))
			break
		}
		fmt.Fprintln(io.Out, client.PlainLine(client.ClipMessage(fmt.Sprintf("  %-4s  %-*s  %s", v.Status, capture.RuleWidth, ft(v.Rule), v.Detail))))
	}
	return 0
}

// throughput is the job's summary line: sequences and tokens per second
// over the forward passes this process ran.
func throughput(p capture.JobProgress) string {
	secs := p.Elapsed.Seconds()
	ran := p.Done - p.Skipped
	s := fmt.Sprintf("captured %d of %s (%d skipped, already validated), %s in %.2fs", ran, plural.N(p.Total, "sequence"), p.Skipped, plural.N(int(p.Tokens), "token"), secs)
	if secs > 0 && ran > 0 {
		s += fmt.Sprintf(": %.1f sequences/s, %.0f tokens/s", float64(ran)/secs, float64(p.Tokens)/secs)
	}
	return s
}

// prefillBaseline times n forward passes (after one warm-up) of the job's
// first batch — its first sequences packed up to maxTok tokens, as the job
// packs them — with no hook: the pure prefill throughput the job's
// end-to-end rate is compared with, measured in the same process.
func prefillBaseline(e *engine.Engine, in *capture.Inputs, maxTok, n int) (float64, error) {
	if maxTok <= 0 {
		maxTok = 4096
	}
	rows, err := in.Rows()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var seqs [][]int32
	tokens := 0
	for {
		_, s, err := rows.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if len(seqs) > 0 && tokens+len(s.IDs) > maxTok {
			break
		}
		seqs = append(seqs, s.IDs)
		tokens += len(s.IDs)
	}
	if _, err := e.Prefill(seqs, nil, false); err != nil {
		return 0, err
	}
	start := time.Now()
	for range n {
		if _, err := e.Prefill(seqs, nil, false); err != nil {
			return 0, err
		}
	}
	return float64(n*tokens) / time.Since(start).Seconds(), nil
}

// diskLine says what the files cost: tensor bytes per token (the format's
// payload, ids included) and file bytes per sample and per token (headers
// and, for .ckpt.gz, compression included).
func diskLine(p capture.JobProgress, m *capture.Manifest) string {
	bytes, tokens, n := m.Summary.FileBytes, m.Summary.Tokens, m.Summary.Sequences
	s := fmt.Sprintf("disk: %d bytes per token of tensors", p.BytesPerToken)
	if bytes > 0 && n > 0 && tokens > 0 {
		s += fmt.Sprintf("; files %d bytes in all, %.0f per sample, %.1f per token", bytes, float64(bytes)/float64(n), float64(bytes)/float64(tokens))
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
		p.bar.Describe(fmt.Sprintf("capture (%.0f tokens/s, %d bytes/token, %s/s to disk)", tps, s.BytesPerToken, bytesize.Binary(int64(float64(s.Bytes)/max(secs, 1e-9)))))
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
		line := fmt.Sprintf("capture: %d/%s, %s, %.1f sequences/s, %.0f tokens/s, %d bytes/token", s.Done, plural.N(s.Total, "sequence"), plural.N(int(s.Tokens), "token"), sps, tps, s.BytesPerToken)
		if ran > 0 && s.Bytes > 0 {
			line += fmt.Sprintf(", %.0f bytes/sample, %s/s to disk", float64(s.Bytes)/float64(ran), bytesize.Binary(int64(float64(s.Bytes)/max(secs, 1e-9))))
		}
		fmt.Fprintln(p.w, line)
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
	DType      string                     `json:"dtype,omitempty"` // the files' dtype as --save-dtype and the text name it: f32, bf16, f16
	Validation []capture.ValidationRecord `json:"validation,omitempty"`
	Recaptured []string                   `json:"recaptured,omitempty"` // kept sequences that no longer held their input row
	// Format and FormatIDs: a trainer format's name and its own layer ids
	// (speculators: 0 = the embeddings, k = hsdb layer k-1's output;
	// specforge: SGLang's, = hsdb layers); Layers are hsdb layers.
	Format    string   `json:"format"`
	FormatIDs []int    `json:"format_layer_ids,omitempty"`
	Notes     []string `json:"notes"` // what the text output prints as "note: ..." before the job
	// AlreadyComplete: --out held this job's finished dump, verified file
	// by file; nothing ran and nothing was written (exit 0).
	AlreadyComplete bool `json:"already_complete,omitempty"`
}

// captureJSON prints the job's result (or its error) as one JSON object
// on stdout and returns the exit status: 0, 1 failed, 130 interrupted.
func captureJSON(io stdio, out string, res *capture.JobResult, notes []string, err error) int {
	r := captureResult{Command: "capture", Out: out, Notes: append([]string{}, notes...)}
	if res != nil {
		r.Captured, r.Skipped, r.Total, r.Tokens, r.Seconds = res.Done-res.Skipped, res.Skipped, res.Total, res.Tokens, res.Elapsed.Seconds()
		r.Recaptured, r.AlreadyComplete = res.Recaptured, res.Complete
		if m := res.Manifest; m != nil && err == nil {
			r.Sequences, r.Layers, r.What, r.DType, r.Validation = m.Summary.Sequences, m.Capture.Layers, m.Capture.What, m.Capture.DTypeName(), m.Validation
			r.Format, r.FormatIDs = m.Capture.Format, m.Capture.FormatIDs
			if r.Format == "" {
				r.Format = string(capture.FormatHsdb)
			}
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

// commaInts writes layers or ids as --layers takes them: "2,30,58".
func commaInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// whatNote says what a dump of --what hidden_states or residual holds: the
// layer lines above it name the stream's ids (HF output_hidden_states[i+1]),
// which only --what stream writes; vLLM's decoder layers return the pair
// (hidden_states, residual) un-summed, and HF's entry is their sum. "" for
// the stream.
func whatNote(what string) string {
	if w, err := capture.ParseWhat(what); err != nil || w == capture.WhatStream {
		return ""
	}
	half := "hidden_states half (the MLP output, without the residual)"
	if what == capture.WhatResidual {
		half = "residual half (the running sum before the MLP output is added)"
	}
	return fmt.Sprintf("--what %s: hidden_states.{i} holds vLLM's un-summed %s of layer i's output, not the stream: HF output_hidden_states[i+1] is hidden_states + residual (--what stream)", what, half)
}

// maxValidationLines bounds the validation entries a capture summary
// prints: hsdb writes one per rule (about ten), so more come from a
// manifest someone else wrote, and the rest are counted.
const maxValidationLines = 32
