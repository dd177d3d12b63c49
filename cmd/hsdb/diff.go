package main

import (
	"flag"
	"fmt"
)

func init() {
	register(&subcommand{name: "diff",
		usage:   "diff PATH --model MODEL [--layers 2,30,58,60] [--tp N] [--seq-lens 512,259]",
		summary: "run hsdb's forward pass on a capture's input_ids and report, per layer, how far the capture is and the first layer where it departs; exit 0 none departs, 1 one does, 2 unreadable",
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
	switch {
	case err != nil:
		return 2
	case rep.Failed:
		return 1
	}
	return 0
}
