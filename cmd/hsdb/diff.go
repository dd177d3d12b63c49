package main

import "hsdb/inspect/client"

func init() {
	register(&subcommand{name: "diff",
		usage:   diffUsage,
		summary: "run hsdb's forward pass on a capture's input_ids and report, per layer, how far the capture is, the first layer where it departs and what it is instead; the same engine and verdict as check: exit 0 valid, 1 problems, 2 unreadable, nothing comparable, a --tp the model cannot be split over or --layers it does not have",
		run:     runDiff})
}

const diffUsage = "diff PATH --model MODEL [--layers 2,30,58,60] [--tp N] [--ep] [--seq-lens 512,259] [--json] [--summary|--full]"

// runDiff is `hsdb diff`. Exit status: check's verdict on the same files
// (one engine): 0 valid; 1 problems found (a layer departs, or another
// rule fails); 2 the input is unreadable, or nothing in it could be
// compared: no verdict, which a script must not read as a pass.
func runDiff(args []string, io stdio) int {
	fs := newFlagSet("diff")
	var cf checkFlags
	cf.register(fs)
	// check's --no-model is refused by diff (it compares with the
	// model's forward pass): left out of diff --help, still named if given.
	fs.Lookup("no-model").Usage = hiddenUsage
	path, done, code := parseCheckArgs(fs, args, io, "diff", diffUsage)
	if done {
		return code
	}
	cf.parsed(fs)
	k, err := cf.checker(io, "diff", true)
	if err != nil {
		return finishCheck(io, cf.json, checkResult{Command: "diff", CheckReport: client.CheckReport{Path: path, Failed: true, Exit: 2}}, err)
	}
	defer k.done()
	rep, err := k.run(path, true)
	r := checkResult{Command: "diff", CheckReport: rep}
	if err != nil {
		r.Exit = 2
	}
	return finishCheck(io, cf.json, r, err)
}
