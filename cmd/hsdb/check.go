package main

import (
	"encoding/json"
	"errors"
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
		usage:   checkUsage,
		summary: "validate capture files (hsdb dumps, safetensors, torch .pt): structure, rules, shape forensics, layer matching; exit 0 valid, 1 problems, 2 unreadable",
		run:     runCheck})
}

// checkFlags are check's and diff's flags: the shared ones (flagTable:
// the model group, --layers, --json, --no-model) and --seq-lens.
type checkFlags struct {
	modelFlags
	seqLens string
}

func (c *checkFlags) register(fs *flag.FlagSet) {
	c.modelFlags.register(fs, "layers", "json", "no-model")
	fs.StringVar(&c.seqLens, "seq-lens", "", "lengths of the sequences a file holds, when known (e.g. 512,259)")
}

// options builds the check options: the model's sizes from its config
// (always, without weights), and the loaded model when it loads (a
// warning otherwise: shapes are then checked from config.json alone)
// unless --no-model. needEngine (diff) makes a load failure, or
// --no-model, an error. --tp, when given, is both the world size the
// capture is examined at and the one the model runs at (1 otherwise). The
// returned func releases the model.
func (c *checkFlags) options(io stdio, cmd string, needEngine bool) (check.CheckOptions, func(), error) {
	var o check.CheckOptions
	done := func() {}
	if c.set["tp"] {
		o.TP = c.tp
	} else {
		c.tp = 1
	}
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
	if needEngine && c.noModel {
		return o, done, fmt.Errorf("--no-model: %s compares the capture with hsdb's own forward pass, which needs the model", cmd)
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
	if c.noModel {
		return o, done, nil
	}
	eo, err := c.modelFlags.options()
	if err != nil {
		return o, done, err
	}
	e, err := engine.Open(path, eo)
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

// checkResult is `check --json`'s and `diff --json`'s object: the REPL's
// check result with the exit status.
type checkResult struct {
	Command string   `json:"command"`
	Path    string   `json:"path"`
	Exit    int      `json:"exit"`
	Failed  bool     `json:"failed"`
	Error   string   `json:"error,omitempty"`
	Lines   []string `json:"lines"`
}

func printCheckJSON(io stdio, r checkResult) int {
	if r.Lines == nil {
		r.Lines = []string{}
	}
	b, _ := json.Marshal(r)
	fmt.Fprintln(io.Out, string(b))
	return r.Exit
}

const checkUsage = "check PATH [--model MODEL] [--layers 2,30,58,60] [--tp N] [--seq-lens 512,259] [--no-model] [--json]"

func runCheck(args []string, io stdio) int {
	fs := newFlagSet("check", io)
	var cf checkFlags
	cf.register(fs)
	path, err := parseWithPath(fs, args)
	if done, code := helpOrError(fs, flagErr(err), io, checkUsage); done {
		return code
	}
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb check:", err)
		return 2
	}
	cf.parsed(fs)
	opts, done, err := cf.options(io, "check", false)
	if err != nil {
		if cf.json {
			return printCheckJSON(io, checkResult{Command: "check", Path: path, Exit: 2, Failed: true, Error: err.Error()})
		}
		fmt.Fprintln(io.Err, "hsdb check:", err)
		return 2
	}
	defer done()
	rep := check.CheckPath(path, opts)
	code := 0
	switch {
	case rep.Unreadable():
		code = 2
	case rep.Failed():
		code = 1
	}
	if cf.json {
		r := checkResult{Command: "check", Path: path, Exit: code, Failed: code != 0, Lines: rep.Lines()}
		if rep.Err != nil {
			r.Error = rep.Err.Error()
		}
		return printCheckJSON(io, r)
	}
	for _, l := range rep.Lines() {
		fmt.Fprintln(io.Out, l)
	}
	return code
}

// flagErr keeps a flag package error (a bad flag, -h) for helpOrError; a
// missing or extra PATH is reported by the caller.
func flagErr(err error) error {
	if err != nil && (errors.Is(err, flag.ErrHelp) || !errors.Is(err, errPath)) {
		return err
	}
	return nil
}

// errPath marks parseWithPath's own errors (no PATH, two PATHs).
var errPath = errors.New("PATH")

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
			return "", fmt.Errorf("%w: one expected, got %q and %q", errPath, path, fs.Arg(0))
		}
		path = fs.Arg(0)
		args = fs.Args()[1:]
	}
	if path == "" {
		return "", fmt.Errorf("no %w given", errPath)
	}
	return path, nil
}
