package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// newFlagSet returns a subcommand's flag set: errors go to io.Err with a
// pointer to --help (not the whole listing), and -h/--help is reported to
// parseArgs.
func newFlagSet(name string, io stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Err)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses a subcommand's flags. It returns done with the exit
// status when there is nothing more to do: -h/--help printed the usage and
// the flags on io.Out (0), or a bad flag was reported (2).
func parseArgs(fs *flag.FlagSet, args []string, io stdio, usage string) (done bool, code int) {
	return helpOrError(fs, fs.Parse(args), io, usage)
}

// helpOrError turns a flag parse error into parseArgs's result.
func helpOrError(fs *flag.FlagSet, err error, io stdio, usage string) (bool, int) {
	switch {
	case err == nil:
		return false, 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(io.Out, "usage: hsdb %s\n\nflags:\n", usage)
		printFlags(io.Out, fs)
		return true, 0
	}
	name := fs.Name()
	if name == "hsdb" {
		name = ""
	} else {
		name += " "
	}
	fmt.Fprintf(io.Err, "hsdb %s--help lists the flags\n", name)
	return true, 2
}

// printFlags lists fs's flags, one a line, as --name TYPE, its meaning and
// its default; hidden ones (an old spelling kept for its hint) are left out.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == hiddenUsage {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		name := "-" + f.Name
		if len(f.Name) > 1 {
			name = "-" + name
		}
		if typ != "" {
			name += " " + typ
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  %-22s %s%s\n", name, usage, def)
	})
}

// versionLine is `hsdb --version`: the main module's version and the
// commit it was built from, from the build information the Go toolchain
// embeds (runtime/debug.ReadBuildInfo; `go version -m BINARY` prints the
// same vcs.revision, vcs.time and vcs.modified settings).
func versionLine(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "hsdb (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	commit := "commit unknown (built without VCS information)"
	if r := set["vcs.revision"]; r != "" {
		commit = "commit " + r
		if set["vcs.modified"] == "true" {
			commit += " (modified)"
		}
		if t := set["vcs.time"]; t != "" {
			commit += ", " + t
		}
	}
	return strings.TrimSpace(fmt.Sprintf("hsdb %s, %s, %s", v, commit, bi.GoVersion))
}
