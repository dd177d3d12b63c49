// Command hsdb is the hidden-state debugger: gdb for the forward pass of
// large language models.
//
//	hsdb [--model PATH] [--tp N] [--device cpu|cuda] [--dtype f32|bf16|f16] [--ep] [--w8a8] [--load-layers A-B] [--workers | --listen ADDR] [--pp N] [-x SCRIPT] [--json]
//	hsdb worker --connect HOST:PORT [--token T] [--rank R]
//	hsdb generate [--model PATH] [--ids 1,2,3 | --prompt TEXT] [-n STEPS] [--temperature T] [--json]
//	hsdb convert llama2c IN.bin --tokenizer tok.bin --out DIR
//
// With no --model, hsdb loads the embedded stories260K (a real trained tiny
// Llama). `hsdb help` lists every subcommand.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
)

// stdio is where a command reads and writes.
type stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// subcommand is one `hsdb NAME ...` entry.
type subcommand struct {
	name, usage, summary string
	run                  func(args []string, io stdio) int
}

var subcommands = map[string]*subcommand{}

// register adds a subcommand at init; a duplicate name panics.
func register(c *subcommand) {
	if _, dup := subcommands[c.name]; dup {
		panic("hsdb: subcommand " + c.name + " registered twice")
	}
	subcommands[c.name] = c
}

// debugger runs the interactive debugger or a script (no subcommand). It is
// set by the REPL's file.
var debugger func(args []string, io stdio) int

// debuggerHelp is the debugger's `help NAME` (repl.CommandHelp), for `hsdb
// help break` at the shell; set by the REPL's file.
var debuggerHelp func(name string) (string, bool)

// debuggerNames lists the debugger's commands (repl.CommandNames), for
// the did-you-mean of `hsdb help NAME`; set by the REPL's file.
var debuggerNames func() []string

func main() {
	os.Exit(hsdbMain(os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// hsdbMain dispatches to a subcommand or the debugger and returns the exit
// status.
func hsdbMain(args []string, io stdio) int {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "--help", "-help":
			if args[0] == "help" && len(args) > 1 { // hsdb help plan: plan's flags, as git help CMD
				if c, ok := subcommands[args[1]]; ok {
					return c.run([]string{"--help"}, io)
				}
				if args[1] == "version" { // hsdb version is taken as hsdb --version is
					fmt.Fprintf(io.Out, "usage: hsdb --version (or hsdb version)\n\n%s\n", versionSummary)
					return 0
				}
				if debuggerHelp != nil { // hsdb help break: the debugger's command, said to be one
					if h, ok := debuggerHelp(args[1]); ok {
						fmt.Fprintf(io.Out, "%s is a command of the debugger (type it at the (hsdb) prompt; `help %s` there says the same):\n\n%s\n", args[1], args[1], h)
						return 0
					}
				}
				// hsdb help NAME takes a debugger command too: a mistyped
				// one (brek) is offered the nearest debugger commands.
				hint := didYouMean(args[1], append(subcommandNames(), "version"), "hsdb ")
				if hint == "" && debuggerNames != nil {
					hint = didYouMean(args[1], debuggerNames(), "hsdb help ")
				}
				fmt.Fprintf(io.Err, "hsdb help: unknown subcommand %q%s (`hsdb help` lists them)\n", args[1], hint)
				return 2
			}
			usage(io.Out)
			return 0
		case "version", "--version", "-version":
			fmt.Fprintln(io.Out, versionLine(debug.ReadBuildInfo()))
			return 0
		}
		if c, ok := subcommands[args[0]]; ok {
			return c.run(args[1:], io)
		}
	}
	if debugger == nil {
		fmt.Fprintln(io.Err, "hsdb: this build has no debugger")
		return 2
	}
	return debugger(args, io)
}

// versionSummary is what `hsdb --version` does, as `hsdb --help` and
// `hsdb help version` say it.
const versionSummary = "print the version and the commit hsdb was built from"

// usage is `hsdb --help`: the debugger's usage and flags, every
// subcommand, and how to see a subcommand's flags.
func usage(w io.Writer) {
	fmt.Fprintln(w, "hsdb: the hidden-state debugger (gdb for the forward pass of LLMs)")
	fmt.Fprintf(w, "\nusage:\n  hsdb %s\n\nflags:\n", debuggerUsage)
	fs, _, _, _ := debuggerFlags()
	printFlags(w, fs)
	fmt.Fprintln(w, "\nsubcommands (hsdb CMD --help lists a command's flags):")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  hsdb %s\n      %s\n", subcommands[n].usage, subcommands[n].summary)
	}
	fmt.Fprintf(w, "  hsdb --version\n      %s\n", versionSummary)
	fmt.Fprintln(w, "\ndebugger commands: `help` at the (hsdb) prompt lists them; hsdb help COMMAND explains one here too (hsdb help break)")
}
