package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"hsdb/engine/suggest"
)

// newFlagSet returns a subcommand's flag set: the flag package prints
// nothing (its errors are Go's: `invalid value "abc" for flag -tp: parse
// error`); helpOrError says them in hsdb's words with a pointer to --help
// (not the whole listing), and -h/--help is reported to parseArgs.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(discard)
	fs.Usage = func() {}
	return fs
}

// flagError restates a flag.Parse error of fs in hsdb's words: the flag as
// --name, the value given and the kind of value it takes ("--tp "abc": want
// a whole number"); "unknown flag --x"; "--tp needs a value". Other errors
// (a flag's own Set refusing a value) keep their text after the flag.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	dash := func(n string) string {
		if len(n) > 1 {
			return "--" + n
		}
		return "-" + n
	}
	if n, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag " + dash(n) + didYouMean(n, flagNames(fs), "--")
	}
	if n, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return dash(n) + " needs a value"
	}
	if m := badBoolFlag.FindStringSubmatch(msg); m != nil {
		return dash(m[1]) + ": " + m[2]
	}
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		name, why := m[2], m[3]
		if f := fs.Lookup(name); f != nil && (why == "parse error" || why == "value out of range") {
			typ, _ := flag.UnquoteUsage(f)
			want := map[string]string{"int": "a whole number", "uint": "a whole number >= 0", "float": "a number",
				"duration": "a duration such as 90s or 10m", "": "true or false"}[typ]
			if want == "" {
				want = "a " + typ
			}
			if why == "value out of range" {
				want += " in range"
			}
			return fmt.Sprintf("%s %s: want %s", dash(name), m[1], want)
		}
		return fmt.Sprintf("%s %s: %s", dash(name), m[1], why)
	}
	return msg
}

// badFlagValue matches the flag package's `invalid value "V" for flag -N:
// WHY` and `invalid boolean value "V" for -N: WHY`.
var badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): (.*)$`)

// badBoolFlag matches the flag package's `invalid boolean flag N: WHY`
// (a bool flag's Set refusing a value given without one: --ep twice).
var badBoolFlag = regexp.MustCompile(`^invalid boolean flag ([^:]+): (.*)$`)

// discard is io.Discard (newFlagSet's io is its stdio parameter).
var discard = io.Discard

// parseArgs parses a subcommand's flags. It returns done with the exit
// status when there is nothing more to do: -h/--help printed the usage and
// the flags on io.Out (0), or a bad flag was reported (2: with --json
// among args, as jsonFailure's one object on stdout).
func parseArgs(fs *flag.FlagSet, args []string, io stdio, usage string) (done bool, code int) {
	return parseArgsJSON(fs, args, io, usage, nil)
}

// parseArgsJSON is parseArgs for a command whose --json failure is an
// object of its own (capture's): failJSON prints it (helpOrError).
func parseArgsJSON(fs *flag.FlagSet, args []string, io stdio, usage string, failJSON func(code int, msg string) int) (done bool, code int) {
	restore := onceFlags(fs)
	err := fs.Parse(args)
	restore()
	return helpOrError(fs, err, io, usage, args, failJSON)
}

// helpOrError turns a flag parse error of fs on args into parseArgs's
// result. A bad flag (unknown, given twice, without its value, or with
// one it does not take) is said on stderr with a pointer to --help, or,
// when args ask for JSON (jsonAsked: the parse may have failed before it
// reached --json), as the command's one failure object on stdout:
// failJSON's, or where it is nil jsonFailure's, as every later failure of
// the command under --json.
func helpOrError(fs *flag.FlagSet, err error, io stdio, usage string, args []string, failJSON func(code int, msg string) int) (bool, int) {
	switch {
	case err == nil:
		return false, 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(io.Out, "usage: hsdb %s\n\nflags:\n", usage)
		printFlags(io.Out, fs)
		return true, 0
	}
	msg := flagError(fs, err)
	if jsonAsked(fs, args) {
		if failJSON != nil {
			return true, failJSON(2, msg)
		}
		name, asJSON := fs.Name(), true
		if name == "hsdb" {
			name = "" // the debugger's failer name
		}
		return true, failer(io, name, &asJSON)(2, "%s", msg)
	}
	cmd := "hsdb"
	if fs.Name() != "hsdb" {
		cmd += " " + fs.Name()
	}
	fmt.Fprintf(io.Err, "%s: %s\n%s --help lists the flags\n", cmd, msg, cmd)
	return true, 2
}

// jsonAsked reports whether args ask for JSON output: fs takes --json and
// an argument before a lone "--" spells it set (--json, -json, or
// --json=V with V true, as strconv.ParseBool reads it). It is for
// failures said before fs.Parse got to --json (or where it stopped at an
// argument that is no flag: `hsdb generate extra --json`): a script that
// gave --json reads one object on stdout whatever failed. Any argument
// counts, the value of another flag too (`--tp --json`): a parse that
// failed cannot tell which was meant.
func jsonAsked(fs *flag.FlagSet, args []string) bool {
	if fs.Lookup("json") == nil {
		return false
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			if name, ok = strings.CutPrefix(a, "-"); !ok {
				continue
			}
		}
		name, val, hasVal := strings.Cut(name, "=")
		if name != "json" {
			continue
		}
		if v, err := strconv.ParseBool(val); !hasVal || err == nil && v {
			return true
		}
	}
	return false
}

// flagNames is the names a mistyped flag of fs is matched against
// (didYouMean): fs's flags but hidden ones, help (-h, --help, which every
// command takes), and version for the debugger's (hsdb --version is taken
// before its flags parse).
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage != hiddenUsage {
			names = append(names, f.Name)
		}
	})
	names = append(names, "help")
	if fs.Name() == "hsdb" {
		names = append(names, "version")
	}
	return names
}

// printFlags lists fs's flags, one a line, as --name TYPE, its meaning and
// its default, the meanings in one column (at least 22 wide, wider for a
// longer --name TYPE such as "--worker-timeout duration"); hidden ones (an
// old spelling kept for its hint) are left out.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	type row struct{ name, text string }
	var rows []row
	width := 22
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
		rows = append(rows, row{name, usage + def})
		width = max(width, len(name))
	})
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s %s\n", width, r.name, r.text)
	}
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

// didYouMean is ": did you mean --model?" for the names nearest to a
// mistyped one (suggest.Closest), each after prefix; "" when none is near.
func didYouMean(typed string, names []string, prefix string) string {
	c := suggest.Closest(typed, names)
	if len(c) == 0 {
		return ""
	}
	for i := range c {
		c[i] = prefix + c[i]
	}
	return ": did you mean " + strings.Join(c, " or ") + "?"
}

// topNames is what `hsdb NAME` takes, sorted (for didYouMean of an
// unexpected first argument): the subcommands, help and version.
func topNames() []string {
	names := append(subcommandNames(), "help", "version")
	sort.Strings(names)
	return names
}

// subcommandNames is the subcommands' names, sorted (for didYouMean).
func subcommandNames() []string {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
