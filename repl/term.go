package repl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"hsdb/engine/suggest"
	"hsdb/inspect/client"
)

// ErrQuit is returned by Exec for `quit`: the caller ends the session.
var ErrQuit = errors.New("quit")

// ErrScript is wrapped by RunScript's error when a command of the script
// failed; the failure has been printed already.
var ErrScript = errors.New("script failed")

// ErrInterrupted is wrapped by RunScript's error when Ctrl-C stopped the
// script (hsdb then exits with status 130).
var ErrInterrupted = errors.New("interrupted by Ctrl-C")

// Term is one debugger front end over a session: it runs command lines and
// prints their results to Out as styled text or, with JSON, as one JSON
// object per result. Tests drive it with Exec, as a user would type.
type Term struct {
	Out io.Writer

	c        client.Client
	opts     options
	st       *Styles
	terminal bool // Out is a terminal: colour "auto" means on
	displays []display
	nextDisp int
	last     string   // the last command line, repeated by an empty line
	depth    int      // nesting of `source`
	scripts  []string // names of the scripts being run, outermost first
	sourcing []string // absolute paths of the script files being run
	// failed counts the commands of scripts that failed in this session
	// (the exit status of `hsdb -x` is 1 when it is not 0, quit or no quit).
	failed int
	// interrupted is set by Ctrl-C while a script runs: the script stops
	// after the command under way.
	interrupted atomic.Bool
	cmd         string // the command line being run (for JSON output)
	lastLine    string // the last command line Exec ran (for PrintError)
}

type display struct {
	ID   int    `json:"id"`
	Expr string `json:"expr"`
}

// Config sets up a Term: JSON output, and whether Out is a terminal (colour
// "auto" then means on).
type Config struct {
	JSON     bool
	Terminal bool
}

// New returns a Term over the debugger c printing to out.
func New(c client.Client, out io.Writer, cfg Config) *Term {
	t := &Term{c: c, Out: out, opts: defaultOptions(), terminal: cfg.Terminal, nextDisp: 1}
	t.opts.json = cfg.JSON
	t.restyle()
	c.OnTrace(func(l client.TraceLine) { t.emit("trace", l, func() string { return t.traceText(l) }) })
	return t
}

func (t *Term) restyle() {
	on := t.opts.colour == "on" || (t.opts.colour == "auto" && t.terminal)
	t.st = NewStyles(t.Out, on && !t.opts.json)
}

// Exec runs one command line and prints its results; an empty line repeats
// the last repeatable command, a line starting with # is a comment. A panic
// inside the command is recovered and returned as an error. It returns
// ErrQuit for quit.
func (t *Term) Exec(line string) (err error) {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "#") {
		return nil
	}
	if line == "" {
		if t.last == "" {
			return nil
		}
		line = t.last
	}
	t.lastLine = line
	name, args, _ := strings.Cut(line, " ")
	args = strings.TrimSpace(args)
	c := lookup(name)
	if c == nil {
		return fmt.Errorf("unknown command %q%s: `help` lists the commands", name, commandHint(name))
	}
	if c.noRepeat {
		t.last = ""
	} else {
		t.last = line
	}
	if args != "" && c.usage == c.name() {
		// A command whose usage is its bare name takes nothing: refuse
		// what follows instead of ignoring it (gdb's `next 3` would
		// otherwise quietly do one step).
		msg := name + " takes no arguments"
		if c.noArgsHint != "" {
			msg += " (" + c.noArgsHint + ")"
		}
		return errors.New(msg)
	}
	prev := t.cmd
	t.cmd = line
	defer func() {
		t.cmd = prev
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in %s: %v (please report it with this trace)\n%s", c.name(), p, debug.Stack())
		}
	}()
	return c.fn(t, args)
}

// PrintError prints err as the REPL does: one line, styled, or a JSON
// object {"command", "error"} naming the command running (a display
// failing at the stop of `run`), else the last command line Exec ran.
func (t *Term) PrintError(err error) {
	cmd := t.cmd
	if cmd == "" {
		cmd = t.lastLine
	}
	t.printErrorFor(cmd, err)
}

// printErrorFor prints err as the failure of command line cmd.
func (t *Term) printErrorFor(cmd string, err error) {
	msg := client.ClipMessage(err.Error()) // it may quote a value of megabytes the user typed
	if t.opts.json {
		t.writeJSON(&object{keys: []string{"command", "error"}, vals: []any{client.ClipMessage(cmd), msg}})
		return
	}
	fmt.Fprintln(t.Out, t.st.Error.Render("error: "+client.PlainText(msg))) // a file's text may hold terminal escapes
}

// emit prints one command result: as JSON {"command", "kind", "result"}, or
// as the text text() renders. NaN and ±Inf are written as the strings
// "NaN", "Inf" and "-Inf", undefined statistics as null and empty lists as
// [] (see jsonValue).
func (t *Term) emit(kind string, v any, text func() string) {
	if t.opts.json {
		t.writeJSON(&object{keys: []string{"command", "kind", "result"}, vals: []any{t.cmd, kind, jsonValue(reflect.ValueOf(v))}})
		return
	}
	s := text()
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(t.Out, s)
}

func (t *Term) writeJSON(o *object) {
	b, err := marshalResult(o)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"command": t.cmd, "error": "internal error: the result cannot be written as JSON: " + err.Error()})
	}
	t.Out.Write(append(b, '\n'))
}

// Close ends the session's forward pass, if one is stopped.
func (t *Term) Close() { t.c.Close() }

// startupOnly are gdb's words for choosing the program, which hsdb does
// when it starts (--model): `load DIR` or `file DIR` in the debugger.
var startupOnly = map[string]bool{"load": true, "file": true}

// commandHint is " (did you mean print?)" for the commands and aliases
// nearest to a mistyped name (suggest.Closest), a pointer to --model for
// gdb's load and file (startupOnly), "" when none is near.
func commandHint(name string) string {
	if startupOnly[name] {
		return " (hsdb loads its model when it starts: quit and run hsdb --model DIR [--tp N])"
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.aliases...)
	}
	if c := suggest.Closest(name, names); len(c) > 0 {
		return " (did you mean " + strings.Join(c, " or ") + "?)"
	}
	return ""
}
