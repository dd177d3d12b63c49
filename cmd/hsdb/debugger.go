package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/mattn/go-isatty"

	"hsdb/engine/regfile"
	hsdbg "hsdb/inspect/debug"
	"hsdb/repl"
)

func init() { debugger, debuggerHelp, debuggerNames = runDebugger, repl.CommandHelp, repl.CommandNames }

// runDebugger is `hsdb [--model PATH] [--tp N] [--device cpu|cuda] [--dtype
// f32|bf16|f16] [-x SCRIPT] [--json]`: it loads the model (the embedded
// stories260K without --model) and runs the script, the commands on stdin
// when it is not a terminal, or the REPL. Exit status: 0; 1 when a command
// of a script failed (a later quit does not clear it) or the model did not
// load; 2 for bad flags, for a -x script or --model path that cannot be
// read and for a --tp, --load-layers or --pp the model rules out; 130 when Ctrl-C stopped a script (the REPL stays
// on Ctrl-C).
func runDebugger(args []string, io stdio) int {
	fs, m, script, history := debuggerFlags()
	// --version after other flags (hsdb --model X --version), as the
	// did-you-mean of a mistyped one offers it; first it never gets here.
	version := fs.Bool("version", false, hiddenUsage)
	if done, code := parseArgs(fs, args, io, debuggerUsage); done {
		return code
	}
	if *version {
		fmt.Fprintln(io.Out, versionLine(debug.ReadBuildInfo()))
		return 0
	}
	if fs.NArg() == 1 && (fs.Arg(0) == "help" || fs.Arg(0) == "version") { // hsdb --json help: the words the did-you-mean offers
		return hsdbMain([]string{fs.Arg(0)}, io)
	}
	if fs.NArg() > 0 { // hsdb hlep, hsdb --json extra: a --json after it, unparsed, still asks for JSON
		asJSON := m.json || jsonAsked(fs, args)
		return failer(io, "", &asJSON)(2, "unexpected %q%s (`hsdb help` lists the subcommands)", fs.Arg(0), didYouMean(fs.Arg(0), topNames(), "hsdb "))
	}
	// A script that cannot be read is a usage error (exit 2, as a bad flag
	// or a missing --model), said before the model loads: a mistyped path
	// must not cost a load of the weights first.
	if *script != "" {
		if st, err := os.Stat(*script); err != nil {
			return failer(io, "", &m.json)(2, "-x: %v", err)
		} else if st.IsDir() {
			return failer(io, "", &m.json)(2, "-x %s: is a directory, not a script", *script)
		}
		if f, err := regfile.OpenInput(*script); err != nil { // unreadable, a named pipe or a device: refused here, not waited on after the load
			return failer(io, "", &m.json)(2, "-x: %v", err)
		} else {
			f.Close()
		}
	}
	if err := m.validate(); err != nil { // a bad flag value: exit 2, as for a bad flag
		return failer(io, "", &m.json)(2, "%v", err)
	}
	if err := m.validateModelPath(); err != nil {
		return failer(io, "", &m.json)(2, "%v", err)
	}
	if err := m.checkFit(); err != nil { // --tp, --load-layers, --ep, --pp the model rules out: usage, before the load
		return failer(io, "", &m.json)(2, "%v", err)
	}
	e, err := m.load(io.Err)
	if err != nil {
		return failer(io, "", &m.json)(loadExit(err), "%v", err)
	}
	defer e.Close()
	s := hsdbg.New(e)
	s.Options, _ = m.options() // m.load succeeded with them
	if tok, err := e.Tokenizer(); err == nil {
		s.Tok = tok
	} else {
		s.TokErr = err
	}
	return repl.Run(hsdbg.NewLocal(s), repl.RunConfig{Script: *script, JSON: m.json, In: io.In, Out: io.Out, Err: io.Err,
		Terminal: isTerminal(io.In) && isTerminal(io.Out), History: *history})
}

// debuggerUsage is the debugger's synopsis.
const debuggerUsage = "[--model PATH] [--tp N] [--device cpu|cuda] [--dtype f32|bf16|f16] [--ep] [--w8a8] [--load-layers A-B] [--workers | --listen ADDR] [--pp N] [-x SCRIPT] [--json] [--history FILE]"

// debuggerFlags is the debugger's flag set: the shared model flags and
// --json (flagTable), -x and --history.
func debuggerFlags() (*flag.FlagSet, *modelFlags, *string, *string) {
	fs := newFlagSet("hsdb")
	m := &modelFlags{}
	m.register(fs, "json")
	script := fs.String("x", "", "run the debugger commands of this file and exit (status 1 if a command failed, 130 on Ctrl-C); commands piped on stdin run the same way, stopping at the first failing command unless 'set errors continue' came first")
	history := fs.String("history", "", "readline history file (default ~/.hsdb_history)")
	return fs, m, script, history
}

func isTerminal(f any) bool {
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		return isatty.IsTerminal(fd.Fd())
	}
	return false
}

var _ io.Reader = os.Stdin
