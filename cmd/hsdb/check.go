package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/modelpath"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
)

func init() {
	register(&subcommand{name: "check",
		usage:   checkUsage,
		summary: "validate capture files (hsdb dumps, safetensors, torch .pt): structure, rules, value conditions, and with --model what each tensor is on values (scale, row alignment, site, shard); exit 0 valid, 1 problems, 2 unreadable, nothing comparable, a --tp the model cannot be split over or --layers it does not have (as diff)",
		run:     runCheck})
}

const checkUsage = "check PATH [--model MODEL] [--layers 2,30,58,60] [--tp N] [--ep] [--seq-lens 512,259] [--no-model] [--json] [--summary|--full]"

// checkFlags are check's and diff's flags: the shared ones (flagTable:
// the model group, --layers, --json, --no-model), --seq-lens, and
// --summary/--full for directories.
type checkFlags struct {
	modelFlags
	seqLens       string
	summary, full bool
}

func (c *checkFlags) register(fs *flag.FlagSet) {
	c.modelFlags.register(fs, "layers", "json", "no-model")
	// --tp left out is not --tp 1 here (its help says what it is): no
	// "(default 1)" after that in --help.
	fs.Lookup("tp").DefValue = ""
	fs.StringVar(&c.seqLens, "seq-lens", "", "lengths of the sequences a file holds, when known (e.g. 512,259)")
	fs.BoolVar(&c.summary, "summary", false, "for a directory: counts per finding and the first files of each (the default above 20 files; with --json as one object)")
	fs.BoolVar(&c.full, "full", false, "for a directory: every file's full report, however many")
}

// output is the client.CheckRequest.Output the flags ask for: --json
// prints one object per file, with --summary one object for the path
// (counts per finding; --summary was ignored under --json).
func (c *checkFlags) output() string {
	switch {
	case c.json && c.summary:
		return "json-summary"
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
// the loaded model (c), or, without a model that loads (or with
// --no-model), from opts alone (the config's sizes when --model names one).
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
// warning otherwise: shapes are then checked from config.json alone)
// unless --no-model. needEngine (diff) makes a load failure, or
// --no-model, an error. --tp, when given, is both the world size the
// capture is examined at and the one the model runs at (1 otherwise; the
// forensics then try 2, 4, 8, 16). Its done releases the model.
func (c *checkFlags) checker(io stdio, cmd string, needEngine bool) (*checker, error) {
	k := &checker{done: func() {}}
	if c.set["tp"] {
		if c.tp < 1 { // as the model group refuses it where a model loads; --no-model loads none
			return k, fmt.Errorf("--tp %d: the world size must be at least 1", c.tp)
		}
		k.req.TP, k.opts.TP = c.tp, c.tp
	} else {
		c.tp = 1
	}
	k.req.NoModel = c.noModel
	if c.summary && c.full {
		return k, fmt.Errorf("--summary and --full ask for two report forms (counts per finding, or every file's report): give one")
	}
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
	if needEngine && c.noModel {
		return k, fmt.Errorf("--no-model: %s compares the capture with hsdb's own forward pass, which needs the model", cmd)
	}
	if err := c.noModelClash(); err != nil {
		return k, err
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
	if err := check.LayersInRange(k.opts.Layers, d, c.model); err != nil {
		return k, err
	}
	if data, _, err := modelpath.ConfigJSON(path); err == nil {
		k.opts.BOS, k.opts.HasBOS, k.opts.Constants, _ = check.ConfigFacts(data)
		k.opts.ConfigSHA256 = check.ConfigSHA256(data)
	}
	// A --tp the model cannot be split over (8 heads over --tp 16), a
	// --load-layers outside it, a --pp it cannot take: a user error, said
	// as every command says it (exit 2); check would otherwise warn and
	// judge the file on shapes alone. With --no-model too: --tp is then
	// the world size the file is examined at.
	if err := c.checkFit(); err != nil {
		return k, err
	}
	if c.noModel {
		return k, nil
	}
	if err := c.validateWorkers(); err != nil {
		return k, err
	}
	// the model loads as every command loads it: the device choice,
	// --workers, --listen and --pp included
	e, err := c.modelFlags.load(io.Err)
	if err != nil {
		if needEngine || errors.Is(err, errUsage) { // --pp without workers: the flags', not the model's
			return k, err
		}
		fmt.Fprintf(io.Err, "hsdb %s: cannot run the model (%s); shapes are checked against config.json alone, without layer matching\n", cmd, errText(err.Error()))
		k.opts.ModelNotRun = err.Error()
		return k, nil
	}
	l := hsdbg.NewLocal(hsdbg.New(e))
	k.c = l
	k.done = func() { l.Close(); e.Close() }
	return k, nil
}

// checkResult is `check --json`'s and `diff --json`'s one object: the
// client's report (snake_case, as the REPL's) with the command, the exit
// status and the error when nothing could be read.
type checkResult struct {
	Command string `json:"command"`
	client.CheckReport
	Error string `json:"error,omitempty"`
}

// finishCheck prints a check or diff result (text or --json) and returns
// its exit status.
func finishCheck(io stdio, asJSON bool, r checkResult, err error) int {
	if err != nil {
		r.Error = err.Error()
	}
	if asJSON && len(r.Lines) > 0 {
		// the report's lines are already one JSON object per file
		for _, l := range r.Lines {
			fmt.Fprintln(io.Out, l)
		}
		return r.Exit
	}
	if asJSON {
		if r.Lines == nil {
			r.Lines = []string{}
		}
		b, _ := json.Marshal(r)
		fmt.Fprintln(io.Out, string(b))
		return r.Exit
	}
	for _, l := range r.Lines {
		fmt.Fprintln(io.Out, l)
	}
	if err != nil && len(r.Lines) == 0 {
		fmt.Fprintf(io.Err, "hsdb %s: %s\n", r.Command, errText(err.Error()))
	}
	return r.Exit
}

func runCheck(args []string, io stdio) int {
	fs := newFlagSet("check")
	var cf checkFlags
	cf.register(fs)
	path, done, code := parseCheckArgs(fs, args, io, "check", checkUsage)
	if done {
		return code
	}
	cf.parsed(fs)
	k, err := cf.checker(io, "check", false)
	if err != nil {
		return finishCheck(io, cf.json, checkResult{Command: "check", CheckReport: client.CheckReport{Path: path, Failed: true, Exit: 2}}, err)
	}
	defer k.done()
	rep, err := k.run(path, false)
	r := checkResult{Command: "check", CheckReport: rep}
	if err != nil {
		r.Exit = 2
	}
	return finishCheck(io, cf.json, r, err)
}

// parseCheckArgs parses check's or diff's (cmd's) flags and its one
// PATH. It returns done with the exit status when there is nothing more
// to do: -h/--help printed the flags (0), or a bad flag or a missing or
// extra PATH was said (2), on stderr or, with --json among args
// (jsonAsked: the parse may have stopped before it), as the command's
// failure object on stdout, the one its later failures print.
func parseCheckArgs(fs *flag.FlagSet, args []string, io stdio, cmd, usage string) (path string, done bool, code int) {
	path, err := parseWithPath(fs, args)
	failJSON := func(code int, msg string) int {
		r := checkResult{Command: cmd, CheckReport: client.CheckReport{Path: path, Failed: true, Exit: code}}
		return finishCheck(io, true, r, errors.New(client.ClipMessage(msg)))
	}
	if done, code := helpOrError(fs, flagErr(err), io, usage, args, failJSON); done {
		return path, true, code
	}
	if err != nil {
		if jsonAsked(fs, args) {
			return path, true, failJSON(2, err.Error())
		}
		fmt.Fprintf(io.Err, "hsdb %s: %v\n", cmd, err)
		return path, true, 2
	}
	return path, false, 0
}

// parseWithPath parses flags given before or after the one PATH argument;
// on an error, the PATH found before it (or "").
func parseWithPath(fs *flag.FlagSet, args []string) (string, error) {
	defer onceFlags(fs)()
	var path string
	for {
		if err := fs.Parse(args); err != nil {
			return path, err
		}
		if fs.NArg() == 0 {
			break
		}
		if path != "" {
			return path, fmt.Errorf("%w: one expected, got %q and %q", errPath, path, fs.Arg(0))
		}
		path = fs.Arg(0)
		args = fs.Args()[1:]
	}
	if path == "" {
		return "", fmt.Errorf("no %w given", errPath)
	}
	return path, nil
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
