package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine"
	"hsdb/engine/modelpath"
	"hsdb/inspect/check"
)

func init() {
	register(&subcommand{name: "check",
		usage:   "check PATH [--model MODEL] [--layers 2,30,58,60] [--tp N] [--seq-lens 512,259] [--json] [--summary|--full]",
		summary: "validate capture files (hsdb dumps, safetensors, torch .pt): structure, rules, value conditions, and with --model what each tensor is on values (scale, row alignment, site, shard); exit 0 valid, 1 problems, 2 unreadable or nothing comparable",
		run:     runCheck})
}

// checkFlags are the flags check and diff share.
type checkFlags struct {
	model, layers, seqLens, device string
	tp                             int
	json, summary, full            bool
}

func (c *checkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.model, "model", "", "the model the capture came from (an HF directory, a llama2.c .bin, or \"embedded\"): its sizes explain wrong shapes and its forward pass names what each tensor is")
	fs.StringVar(&c.layers, "layers", "", "the layers the capture should hold, in order, e.g. 2,30,58,60")
	fs.IntVar(&c.tp, "tp", 0, "tensor-parallel world size the capture ran at (for shard forensics; default: try 2, 4, 8, 16)")
	fs.StringVar(&c.seqLens, "seq-lens", "", "lengths of the sequences a file holds, when known (e.g. 512,259)")
	fs.StringVar(&c.device, "device", "cpu", "device for hsdb's own forward pass: cpu or cuda")
	fs.BoolVar(&c.json, "json", false, "print one JSON object per file (stable snake_case keys)")
	fs.BoolVar(&c.summary, "summary", false, "for a directory: counts per finding and the first files of each (the default above 20 files)")
	fs.BoolVar(&c.full, "full", false, "for a directory: every file's full report, however many")
}

// print renders a path report as the flags ask: JSON lines, a summary
// (asked, or a directory of more than 20 files without --full), or lines.
func (c *checkFlags) print(io stdio, rep *check.PathReport, lines func() []string) {
	var out []string
	switch {
	case c.json:
		out = rep.JSONLines()
	case c.summary || !c.full && len(rep.Files) > 20:
		out = rep.SummaryLines(3)
	default:
		out = lines()
	}
	for _, l := range out {
		fmt.Fprintln(io.Out, l)
	}
}

// options builds the check options: the model's sizes from its config
// (always, without weights), and the loaded model when it loads (a
// warning otherwise: shapes are then checked from config.json alone).
// needEngine makes a load failure an error. The returned func releases
// the model.
func (c *checkFlags) options(io stdio, cmd string, needEngine bool) (check.CheckOptions, func(), error) {
	var o check.CheckOptions
	done := func() {}
	o.TP = c.tp
	if c.layers != "" {
		ls, err := check.ParseLayers(c.layers)
		if err != nil {
			return o, done, fmt.Errorf("--layers: %w", err)
		}
		o.Layers = ls
	}
	if c.seqLens != "" {
		for _, f := range strings.Split(c.seqLens, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return o, done, fmt.Errorf("--seq-lens: %q is not a positive length", f)
			}
			o.SeqLens = append(o.SeqLens, n)
		}
	}
	if c.model == "" {
		if needEngine {
			return o, done, fmt.Errorf("--model is required: %s compares the capture with hsdb's own forward pass", cmd)
		}
		return o, done, nil
	}
	path := c.model
	if path == "embedded" {
		path = ""
	}
	d, err := modelpath.ConfigDims(path)
	if err != nil {
		return o, done, err
	}
	o.Dims = d
	if data, _, err := modelpath.ConfigJSON(path); err == nil {
		o.BOS, o.HasBOS, o.Constants, _ = check.ConfigFacts(data)
	}
	e, err := engine.Open(path, engine.Options{TP: 1, Device: c.device})
	if err != nil {
		if needEngine {
			return o, done, err
		}
		fmt.Fprintf(io.Err, "hsdb %s: cannot run the model (%v); shapes are checked against config.json alone, without layer matching\n", cmd, err)
		return o, done, nil
	}
	for k, v := range e.Dims.Named {
		if _, ok := d.Named[k]; !ok {
			d.Named[k] = v
		}
	}
	o.Model = targetOf(e)
	return o, func() { e.Close() }, nil
}

func runCheck(args []string, io stdio) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Err)
	var cf checkFlags
	cf.register(fs)
	path, err := parseWithPath(fs, args)
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb check:", err)
		return 2
	}
	opts, done, err := cf.options(io, "check", false)
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb check:", err)
		return 2
	}
	defer done()
	rep := check.CheckPath(path, opts)
	cf.print(io, rep, rep.Lines)
	return int(rep.Verdict())
}

// parseWithPath parses flags given before or after the one PATH argument.
func parseWithPath(fs *flag.FlagSet, args []string) (string, error) {
	var path string
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		if path != "" {
			return "", fmt.Errorf("one PATH expected, got %q and %q", path, fs.Arg(0))
		}
		path = fs.Arg(0)
		args = fs.Args()[1:]
	}
	if path == "" {
		return "", fmt.Errorf("no PATH given")
	}
	return path, nil
}
