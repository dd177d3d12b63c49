package main

import (
	"fmt"

	"hsdb/inspect/client"
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
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb diff:", err)
		return 2
	}
	cf.parsed(fs)
	k, err := cf.checker(io, "diff", true)
	if err != nil {
		return finishCheck(io, cf.json, checkResult{Command: "diff", CheckReport: client.CheckReport{Path: path, Failed: true}, Exit: 2}, err)
	}
	defer k.done()
	rep, err := k.run(path, true)
	r := checkResult{Command: "diff", CheckReport: rep}
	switch {
	case err != nil:
		r.Exit = 2
	case rep.Failed:
		r.Exit = 1
	case !rep.Comparable:
		r.Exit = 2
	}
	return finishCheck(io, cf.json, r, err)
}
