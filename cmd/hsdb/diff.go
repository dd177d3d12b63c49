package main

import (
	"fmt"

	"hsdb/inspect/check"
)

func init() {
	register(&subcommand{name: "diff",
		usage:   diffUsage,
		summary: "run hsdb's forward pass on a capture's input_ids and report, per layer, how far the capture is and the first layer where it departs; exit 0 none departs, 1 one does, 2 unreadable or nothing comparable",
		run:     runDiff})
}

const diffUsage = "diff PATH --model MODEL [--layers 2,30,58,60] [--tp N] [--ep] [--seq-lens 512,259] [--json]"

// runDiff is `hsdb diff`. Exit status: 0 every labelled layer is within
// tolerance; 1 a layer departs; 2 the input is unreadable, or nothing in
// it could be compared (no entry aligns with input_ids, or none claims a
// layer): no verdict, which a script must not read as a pass.
func runDiff(args []string, io stdio) int {
	fs := newFlagSet("diff", io)
	var cf checkFlags
	cf.register(fs)
	path, err := parseWithPath(fs, args)
	if done, code := helpOrError(fs, flagErr(err), io, diffUsage); done {
		return code
	}
	fail := func(err error) int {
		if cf.json {
			return printCheckJSON(io, checkResult{Command: "diff", Path: path, Exit: 2, Failed: true, Error: err.Error()})
		}
		fmt.Fprintf(io.Err, "hsdb diff: %v\n", err)
		return 2
	}
	if err != nil {
		return fail(err)
	}
	cf.parsed(fs)
	opts, done, err := cf.options(io, "diff", true)
	if err != nil {
		return fail(err)
	}
	defer done()
	rep := check.CheckPath(path, opts)
	if rep.Err != nil {
		return fail(rep.Err)
	}
	departs, comparable := false, false
	var out []string
	for _, f := range rep.Files {
		lines, d := f.DiffLines()
		if f.Comparable() {
			comparable, departs = true, departs || d
		}
		out = append(out, lines...)
	}
	code := 0
	switch {
	case rep.Unreadable():
		code = 2
	case departs:
		code = 1
	case !comparable:
		code = 2
		out = append(out, "nothing comparable: no verdict (exit 2)")
	}
	if cf.json {
		return printCheckJSON(io, checkResult{Command: "diff", Path: path, Exit: code, Failed: code != 0, Lines: out})
	}
	for _, l := range out {
		fmt.Fprintln(io.Out, l)
	}
	return code
}
