package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"hsdb/engine"
	"hsdb/engine/bytesize"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/plan"
	"hsdb/engine/worker"
	"hsdb/inspect/plural"
)

func init() {
	register(&subcommand{name: "plan", usage: planUsage,
		summary: "memory per rank (weights as kept, KV cache, one layer's activations) and whether it fits, from config.json alone (weights optional); exit 1 when it does not fit or the model cannot be planned (the error on stderr), 2 for bad flags and a --tp, --load-layers, --ep, --pp or --w8a8 the model rules out",
		run:     runPlan})
}

const planUsage = "plan [--model DIR|FILE.bin] [--tp N] [--pp N] [--ep] [--w8a8] [--device-memory 141GiB] [--max-tokens T] [--seqs S] [--seq-len L] [--dtype bf16] [--load-layers A-B] [--device cuda|cpu] [--json]"

func runPlan(args []string, io stdio) int {
	fs := newFlagSet("plan")
	var mf modelFlags
	// plan starts no worker: the worker flags are refused, not ignored.
	mf.registerExcept(fs, workerGroup, "json")
	fs.Lookup("pp").Usage = "pipeline stages planned: the decoder layers split into N stages as vLLM splits them, each a --tp group of ranks"
	// A plan is for GPUs unless --device cpu is given (the CPU backend
	// dequantizes quantized weights on load and its ranks share the host).
	mf.device, fs.Lookup("device").DefValue = "cuda", "cuda"
	fs.Lookup("device").Usage = "the backend planned for: cuda (quantized weights kept as stored, a device per rank) or cpu (quantized weights dequantized on load, activations f32, the ranks sharing the host); no device is probed"
	devMem := fs.String("device-memory", "141GiB", "memory of one device (--device cpu: of the host): 141GiB (H200), 80GiB, 96GB, or bytes")
	tokens := fs.Int("max-tokens", plan.DefaultTokens, "tokens one forward step computes (activations), and by default the longest sequence the KV cache holds")
	seqs := fs.Int("seqs", 1, "sequences the KV cache holds at once: hsdb's engine keeps a slot per sequence of a batch, each sized for its longest (2 sequences of 17 and 9 tokens hold 2 × 32 rows); a capture: the most rows a --max-batch-tokens batch packs, with --seq-len the longest of them; a longer row runs alone: plan it apart with --seqs 1")
	seqLen := fs.Int("seq-len", 0, "the longest sequence's tokens, which sizes every slot, at most max_position_embeddings (default --max-tokens, or max_position_embeddings when smaller; 4 sequences of 1024 in one step: --max-tokens 4096 --seqs 4 --seq-len 1024)")
	if done, code := parseArgs(fs, args, io, planUsage); done {
		return code
	}
	fail := failer(io, "plan", &mf.json)
	if fs.NArg() > 0 {
		mf.json = mf.json || jsonAsked(fs, args) // plan extra --json: the parse stopped before --json
		return fail(2, "unexpected arguments %q", fs.Args())
	}
	if mf.model == "embedded" { // as a load takes it: "" and "embedded" name the embedded stories260K
		mf.model = ""
	}
	if mf.tp > 1<<12 {
		return fail(2, "--tp %d: want 1 to 4096 ranks", mf.tp)
	}
	if *tokens < 0 || *tokens > 1<<30 {
		return fail(2, "--max-tokens %d: want 0 to %d", *tokens, 1<<30)
	}
	if *seqs < 1 || *seqs > 1<<20 {
		return fail(2, "--seqs %d: want 1 to %d", *seqs, 1<<20)
	}
	if *seqLen < 0 || *seqLen > 1<<30 {
		return fail(2, "--seq-len %d: want 1 to %d (0: --max-tokens)", *seqLen, 1<<30)
	}
	if *tokens == 0 {
		// --max-tokens 0 plans the weights alone: a --seqs or --seq-len
		// given with it sizes a KV cache nothing counts, refused rather
		// than ignored.
		for _, f := range []string{"seq-len", "seqs"} {
			if flagGiven(fs, f) {
				return fail(2, "--%s with --max-tokens 0: --max-tokens 0 plans the weights alone (no KV cache, no activations), so --%s would size nothing; leave it out, or give --max-tokens the tokens of one step", f, f)
			}
		}
	}
	mem, err := parseBytes(*devMem)
	if err != nil {
		return fail(2, "--device-memory: %v", err)
	}
	eo, err := mf.options()
	if err == nil {
		err = mf.validateModelPath()
	}
	if err == nil && mf.pp < 1 {
		err = fmt.Errorf("--pp %d: want at least one stage", mf.pp)
	}
	if err == nil {
		err = mf.checkFit() // --tp, --load-layers, --ep, --pp the model rules out: usage, as every command says it
	}
	if err != nil {
		return fail(2, "%v", err)
	}
	// --seq-len past the model's max_position_embeddings is a flag value
	// the model cannot take, a usage error (exit 2) as --seq-len 0 is; the
	// plan refused it with exit 1, as a model that fails to load. A config
	// that cannot be read is left for the plan to name.
	if d, err := modelpath.ConfigDims(mf.model); err == nil && d.MaxPos > 0 && *seqLen > d.MaxPos {
		return fail(2, "--model %s: %v", planName(mf.model), plan.SeqLenPastMaxPos(*seqLen, d.MaxPos))
	}
	po := engine.PlanOptions{TP: eo.TP, EP: eo.EP, Layers: eo.Layers, DType: eo.DType, Tokens: *tokens, Seqs: *seqs, SeqLen: *seqLen, DeviceBytes: mem, Device: eo.Device, W8A8: eo.W8A8}
	// A CPU plan against --device-memory's default compares with an
	// H200's memory, not this host's: said under the plan.
	memNote := ""
	if eo.Device == "cpu" && !flagGiven(fs, "device-memory") {
		memNote = "note: --device cpu is checked against --device-memory, whose default is an H200's 141 GiB, not this host's memory: give the host's (e.g. --device-memory 512GiB)"
	}
	if mf.pp != 1 {
		return runPlanStages(io, &mf, po, memNote, fail)
	}
	p, err := engine.PlanModel(mf.model, po)
	if err != nil {
		return fail(1, "%v", err)
	}
	if mf.json {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintln(io.Out, string(b))
	} else {
		printPlan(io.Out, planName(mf.model), p, false)
		if memNote != "" {
			fmt.Fprintln(io.Out, memNote)
		}
	}
	if !p.Fits {
		return 1
	}
	return 0
}

// stagePlan is one pipeline stage's plan in `hsdb plan --pp N --json`.
type stagePlan struct {
	Stage  int             `json:"stage"`
	Layers string          `json:"layers"`
	Plan   *engine.DirPlan `json:"plan"`
	rng    model.LayerRange
}

// layerRangeText names a stage's decoder layers: "decoder layers 0-2", or
// "decoder layer 2" for a stage of one layer (not "2-2").
func layerRangeText(r model.LayerRange) string {
	if r.First == r.Last {
		return fmt.Sprintf("decoder layer %d", r.First)
	}
	return "decoder layers " + r.String()
}

// runPlanStages is `hsdb plan --pp N`: the decoder layers split into N
// stages as vLLM's get_pp_indices splits them (worker.StageLayers), each
// stage a --tp group planned with its layers, the first stage with the
// embeddings, the last with the final norm and head (and the embeddings
// when the head is tied to them), as vLLM places them and hsdb's stages
// load them (model.StageEnds). It fits when every stage does.
func runPlanStages(io stdio, mf *modelFlags, po engine.PlanOptions, memNote string, fail func(int, string, ...any) int) int {
	d, err := modelpath.ConfigDims(mf.model)
	if err != nil {
		return fail(1, "%v", err)
	}
	ranges, err := worker.StageLayers(d.Layers, mf.pp)
	if err != nil {
		return fail(2, "%v", err)
	}
	var stages []stagePlan
	fits := true
	for s, lr := range ranges {
		o := po
		o.Layers = &lr
		o.Stage = &model.StageEnds{First: s == 0, Last: s == len(ranges)-1}
		p, err := engine.PlanModel(mf.model, o)
		if err != nil {
			// An error of the model at this --tp (heads not divisible, a
			// bad config) is no stage's: said without a stage when the
			// whole model's plan fails alike.
			if _, werr := engine.PlanModel(mf.model, po); werr != nil && werr.Error() == err.Error() {
				return fail(1, "%v", err)
			}
			return fail(1, "stage %d: %v", s, err)
		}
		stages = append(stages, stagePlan{Stage: s, Layers: lr.String(), Plan: p, rng: lr})
		fits = fits && p.Fits
	}
	hostNeed, hostLine, hostFits := stagesOnHost(stages)
	fits = fits && hostFits
	if mf.json {
		b, err := json.MarshalIndent(struct {
			Stages    []stagePlan `json:"stages"`
			PP        int         `json:"pipeline_stages"`
			HostBytes int64       `json:"host_bytes,omitempty"`
			Fits      bool        `json:"fits"`
		}{stages, mf.pp, hostNeed, fits}, "", "  ")
		if err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintln(io.Out, string(b))
	} else {
		fmt.Fprintf(io.Out, "%d pipeline stages of --tp %d (%d workers); the first stage holds the embeddings, the last the final norm and head (as vLLM places them)\n", mf.pp, max(po.TP, 1), mf.pp*max(po.TP, 1))
		for _, st := range stages {
			fmt.Fprintf(io.Out, "\nstage %d: %s\n", st.Stage, layerRangeText(st.rng))
			printPlan(io.Out, planName(mf.model), st.Plan, true)
		}
		if hostLine != "" {
			fmt.Fprintln(io.Out, "\n"+hostLine)
		}
		if memNote != "" {
			fmt.Fprintln(io.Out, "\n"+memNote)
		}
	}
	if !fits {
		return 1
	}
	return 0
}

// stageAdvice replaces plan.FitAdvice in a --pp plan, where --load-layers
// is refused (each stage's layers come from --pp).
const stageAdvice = "use more pipeline stages (--pp) or more ranks per stage (--tp)"

// hostStageAdvice replaces plan.HostFitAdvice in a --pp plan of ranks
// sharing a host (--device cpu): more ranks on the stage's host add no
// memory, more stages do where each has a host of its own.
const hostStageAdvice = "use more pipeline stages (--pp), each on a host of its own (hsdb --listen), or a machine with more memory (a stage's ranks share its host's: more ranks on it add none)"

// fitAdvice is what a refusal of p says the user can change: the plan's
// own (plan.Plan.Advice), or in a stage of a --pp plan (stages), where
// --load-layers is refused, stageAdvice or, for ranks sharing a host,
// hostStageAdvice and what dequantizing costs (DequantAdvice).
func fitAdvice(p *engine.DirPlan, stages bool) string {
	switch {
	case !stages:
		return p.Advice()
	case p.Shared:
		return hostStageAdvice + p.DequantAdvice()
	}
	return stageAdvice
}

// weightsFit says whether p's weights alone fit its device memory (every
// rank's, or all ranks' together where they share the host) while some
// tokens are planned: then only the KV cache and activations overflow.
func weightsFit(p *engine.DirPlan) bool {
	if p.Tokens == 0 || p.DeviceBytes <= 0 {
		return false
	}
	var sum int64
	for _, r := range p.Ranks {
		if r.Weights > p.DeviceBytes {
			return false
		}
		sum += r.Weights
		if p.Shared && sum > p.DeviceBytes {
			return false
		}
	}
	return true
}

// printPlan renders a plan as a table with decimal and binary units; a
// refusal ends with what the user can change (fitAdvice: for a stage of a
// --pp plan when stages).
func printPlan(w io.Writer, dir string, p *engine.DirPlan, stages bool) {
	from := "config.json alone (no tensor headers)"
	switch {
	case p.Llama2C:
		from = "the llama2.c checkpoint's header"
	case p.Checkpoint:
		from = "config.json and the checkpoint's tensor headers"
	}
	ep := ""
	if p.ExpertParallel { // the split --ep chose, said as the header says --tp
		ep = " --ep (routed experts whole per rank)"
	}
	fmt.Fprintf(w, "%s %s at --tp %d%s, from %s; %s\n", dir, p.Arch, p.World, ep, from, plural.N(p.Tokens, "token"))
	w8a8 := ""
	if p.W8A8 {
		w8a8 = "; --w8a8: the fp8 linears' inputs quantized to fp8 per token and 128 columns (counted with the activations, with cuBLASLt's workspace)"
	}
	if p.Quant == "" {
		fmt.Fprintf(w, "weights: %s, none quantized; activations and KV cache %s%s\n", p.Dense, p.Act, w8a8)
	} else {
		fmt.Fprintf(w, "weights: quantized %s; dense %s; activations and KV cache %s%s\n", p.Quant, p.Dense, p.Act, w8a8)
	}
	switch {
	case p.KVConvention != "" && p.Tokens == 0:
		fmt.Fprintf(w, "KV cache: %s; none counted (--max-tokens 0: weights alone)\n", p.KVConvention)
	case p.KVConvention != "":
		fmt.Fprintf(w, "KV cache: %s; %s of up to %s (--seqs, --seq-len: the engine keeps a slot per sequence, each sized for the longest)\n", p.KVConvention, plural.N(max(p.Seqs, 1), "sequence"), plural.N(p.SeqLen, "token"))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tweights\tof which quantized\tKV cache\tactivations\ttotal\t")
	for i := 0; i < len(p.Ranks); { // consecutive ranks with the same plan share a row
		r, j := p.Ranks[i], i+1
		for j < len(p.Ranks) && p.Ranks[j].Weights == r.Weights && p.Ranks[j].QuantizedWeights == r.QuantizedWeights &&
			p.Ranks[j].KV == r.KV && p.Ranks[j].Activations == r.Activations {
			j++
		}
		ranks := fmt.Sprint(r.Rank)
		if j > i+1 {
			ranks = fmt.Sprintf("%d-%d", r.Rank, p.Ranks[j-1].Rank)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", ranks, both(r.Weights), both(r.QuantizedWeights), both(r.KV), both(r.Activations), both(r.Total))
		i = j
	}
	tw.Flush()
	switch err := p.Check(); {
	case p.DeviceBytes <= 0:
		fmt.Fprintln(w, "fits: not checked (no --device-memory)")
	case err == nil:
		left, _ := p.Headroom() // Check summed the same ranks without overflow
		if p.Shared && len(p.Ranks) > 1 {
			fmt.Fprintf(w, "fits: yes, the %d ranks sharing the host together within %s (%s left)\n", len(p.Ranks), both(p.DeviceBytes), both(left))
			break
		}
		fmt.Fprintf(w, "fits: yes, every rank within %s (the fullest has %s left)\n", both(p.DeviceBytes), both(left))
	default:
		msg := strings.TrimPrefix(err.Error(), plan.ErrMemory.Error()+": ")
		advice := fitAdvice(p, stages)
		if weightsFit(p) {
			// The KV cache and activations tip it over: fewer tokens
			// per step is the first thing to change, not the layers.
			advice = "the weights alone fit, so plan fewer tokens (--max-tokens, --seqs, --seq-len), or " + advice
		}
		fmt.Fprintf(w, "fits: no, %s\n", strings.Replace(msg, p.Advice(), advice, 1))
	}
	if p.Skipped != "" {
		fmt.Fprintf(w, "note: %s\n", p.Skipped)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, n := range p.NotCounted {
		fmt.Fprintf(w, "not counted: %s\n", n)
	}
}

// both renders bytes in GB and GiB from 1 GB on ("85.1 GB (79.3 GiB)"),
// in binary units below ("274 MiB"); bytesize's three digits throughout.
func both(n int64) string {
	if n < 1e9 {
		return bytesize.Binary(n)
	}
	return bytesize.Decimal(n) + " (" + bytesize.Binary(n) + ")"
}

// parseBytes reads a memory size: a number with a unit (B, KB, MB, GB, TB
// decimal; KiB, MiB, GiB, TiB binary; K, M, G, T binary, as nvidia-smi's
// MiB), or plain bytes (at least 1 MiB: a bare "141" meant GiB). Errors
// name the text.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	units := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
	mult, ok := units[strings.ToUpper(unit)]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("%q: want a size such as 141GiB, 80GB or 1073741824", s)
	}
	b := v * mult
	if !(b > 0) || b > math.MaxInt64/2 || math.IsInf(b, 0) {
		return 0, fmt.Errorf("%q: want a positive size below 4 EiB", s)
	}
	if unit == "" && b < 1<<20 {
		// "141" is 141 bytes, not the 141 GiB meant: no device is that small.
		return 0, fmt.Errorf("%q without a unit is %s bytes, less than any device holds; give a unit: %sGiB, %sGB", s, num, num, num)
	}
	return int64(b), nil
}

// planName is how a plan names the model: its --model path, or
// modelpath.Embedded for the embedded stories260K.
func planName(path string) string {
	if path == "" {
		return modelpath.Embedded
	}
	return path
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
