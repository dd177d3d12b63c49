package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine"
	"hsdb/engine/modelpath"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
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

// output is the client.CheckRequest.Output the flags ask for.
func (c *checkFlags) output() string {
	switch {
	case c.json:
		return "json"
	case c.summary:
		return "summary"
	case c.full:
		return "full"
	}
	return ""
}

// checker is how check and diff run: through the debugger's client over
// the loaded model (c), or, without a model that loads, from opts alone
// (the config's sizes when --model names one).
type checker struct {
	c    client.Client
	req  client.CheckRequest
	opts check.CheckOptions
	done func()
}

// run checks path (diff: compares it with the model) and returns the
// report and the error when nothing could be read.
func (k *checker) run(path string, diff bool) (client.CheckReport, error) {
	switch {
	case k.c != nil && diff:
		return k.c.Diff(path, k.req)
	case k.c != nil:
		return k.c.Check(path, k.req)
	}
	return check.CheckPath(path, k.opts).Report(diff, k.req.Output)
}

// checker builds the check options: the model's sizes from its config
// (always, without weights), and the loaded model when it loads (a
// warning otherwise: shapes are then checked from config.json alone).
// needEngine makes a load failure an error. Its done releases the model.
func (c *checkFlags) checker(io stdio, cmd string, needEngine bool) (*checker, error) {
	k := &checker{done: func() {}}
	k.req.TP, k.opts.TP = c.tp, c.tp
	k.req.Output = c.output()
	if c.layers != "" {
		ls, err := client.ParseLayers(c.layers)
		if err != nil {
			return k, fmt.Errorf("--layers: %w", err)
		}
		k.req.Layers, k.opts.Layers = ls, ls
	}
	if c.seqLens != "" {
		for _, f := range strings.Split(c.seqLens, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return k, fmt.Errorf("--seq-lens: %q is not a positive length", f)
			}
			k.req.SeqLens = append(k.req.SeqLens, n)
		}
		k.opts.SeqLens = k.req.SeqLens
	}
	if c.model == "" {
		if needEngine {
			return k, fmt.Errorf("--model is required: %s compares the capture with hsdb's own forward pass", cmd)
		}
		return k, nil
	}
	path := c.model
	if path == "embedded" {
		path = ""
	}
	d, err := modelpath.ConfigDims(path)
	if err != nil {
		return k, err
	}
	k.opts.Dims = d
	if data, _, err := modelpath.ConfigJSON(path); err == nil {
		k.opts.BOS, k.opts.HasBOS, k.opts.Constants, _ = check.ConfigFacts(data)
	}
	e, err := engine.Open(path, engine.Options{TP: 1, Device: c.device})
	if err != nil {
		if needEngine {
			return k, err
		}
		fmt.Fprintf(io.Err, "hsdb %s: cannot run the model (%v); shapes are checked against config.json alone, without layer matching\n", cmd, err)
		return k, nil
	}
	l := hsdbg.NewLocal(hsdbg.New(e))
	k.c = l
	k.done = func() { l.Close(); e.Close() }
	return k, nil
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
	k, err := cf.checker(io, "check", false)
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb check:", err)
		return 2
	}
	defer k.done()
	rep, err := k.run(path, false)
	for _, l := range rep.Lines {
		fmt.Fprintln(io.Out, l)
	}
	if err != nil {
		return 2
	}
	return rep.Exit
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
