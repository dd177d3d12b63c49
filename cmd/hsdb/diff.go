package main

import (
	"flag"
	"fmt"
)

func init() {
	register(&subcommand{name: "diff",
		usage:   "diff PATH --model MODEL [--layers 2,30,58,60] [--tp N] [--seq-lens 512,259] [--json] [--summary|--full]",
		summary: "run hsdb's forward pass on a capture's input_ids and report, per layer, how far the capture is, the first layer where it departs and what it is instead; the same engine and verdict as check: exit 0 valid, 1 problems, 2 unreadable or nothing comparable",
		run:     runDiff})
}

func runDiff(args []string, io stdio) int {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(io.Err)
	var cf checkFlags
	cf.register(fs)
	path, err := parseWithPath(fs, args)
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb diff:", err)
		return 2
	}
	k, err := cf.checker(io, "diff", true)
	if err != nil {
		fmt.Fprintln(io.Err, "hsdb diff:", err)
		return 2
	}
	defer k.done()
	rep, err := k.run(path, true)
	if err != nil && rep.Files == 0 {
		fmt.Fprintf(io.Err, "hsdb diff: %v\n", err)
		return 2
	}
	for _, l := range rep.Lines {
		fmt.Fprintln(io.Out, l)
	}
	if err != nil {
		return 2
	}
	return rep.Exit
}
