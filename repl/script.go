package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"hsdb/engine/regfile"
	"hsdb/inspect/plural"
)

// maxScriptDepth is how deep `source` may nest (recursion through
// different names of one file is caught by the depth).
const maxScriptDepth = 16

// maxScriptLine is the longest line a script may hold (16 MiB): a line is
// read whole, so a file without newlines (/dev/zero) stops there with an
// error naming the file and line, not by exhausting memory.
const maxScriptLine = 1 << 24

// RunScript runs the commands of r (named name in messages) one per line.
// It stops at the first failing command, printing "name:line: error", and
// returns an error wrapping ErrScript, unless `set errors continue` is in
// force: then it goes on and returns ErrScript at the end if any command
// failed. A failure inside a sourced script is printed once, by the script
// it happened in. quit ends the script: it returns ErrQuit, wrapping
// ErrScript as well when a command had failed. Ctrl-C (Term.interrupt)
// stops the script after the command under way, with ErrInterrupted.
func (t *Term) RunScript(r io.Reader, name string) error {
	if t.depth >= maxScriptDepth {
		return fmt.Errorf("source %s: scripts nested more than %d deep (%s)", name, maxScriptDepth, strings.Join(t.scripts, " → "))
	}
	if t.depth == 0 {
		t.interrupted.Store(false)
	}
	t.depth++
	t.scripts = append(t.scripts, name)
	defer func() {
		t.depth--
		t.scripts = t.scripts[:len(t.scripts)-1]
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), maxScriptLine)
	sc.Split(scanScriptLines)
	next, stopReading := t.scriptLines(sc)
	defer stopReading()
	failed := 0
	lines := 0
	for n := 1; ; n++ {
		text, ok, intr := next()
		if intr {
			return fmt.Errorf("%w: %s stopped before line %d", ErrInterrupted, name, n)
		}
		if !ok {
			break
		}
		lines = n
		if n == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a UTF-8 byte order mark ("UTF-8 with BOM" editors)
		}
		line := strings.TrimSpace(text)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if t.interrupted.Load() {
			return fmt.Errorf("%w: %s stopped before line %d", ErrInterrupted, name, n)
		}
		if t.opts.echo && !t.opts.json {
			fmt.Fprintln(t.Out, t.st.Prompt.Render("(hsdb)")+" "+line)
		}
		t.last = ""
		err := t.Exec(line)
		switch {
		case errors.Is(err, ErrInterrupted):
			return err
		case errors.Is(err, ErrQuit):
			if failed > 0 || errors.Is(err, ErrScript) {
				return fmt.Errorf("%w at %s:%d after failed commands: %w", ErrQuit, name, n, ErrScript)
			}
			return err
		case err != nil:
			failed++
			if !errors.Is(err, ErrScript) { // a sourced script prints its own failures
				t.failed++
				t.printErrorFor(line, fmt.Errorf("%s:%d: %w", name, n, err))
			}
			if t.interrupted.Load() { // failed under Ctrl-C (a request to a worker abandoned): the interrupt's status
				return fmt.Errorf("%w: %s stopped after line %d", ErrInterrupted, name, n)
			}
			if !t.opts.continueOnError {
				return fmt.Errorf("%w: %s:%d: %v", ErrScript, name, n, err)
			}
		}
		if t.interrupted.Load() {
			return fmt.Errorf("%w: %s stopped after line %d", ErrInterrupted, name, n)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: a line longer than %d bytes (the most one script line may hold)", name, lines+1, maxScriptLine)
		}
		return fmt.Errorf("%s:%d: %w", name, lines+1, err)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %s of %s failed", ErrScript, plural.N(failed, "command"), name)
	}
	return nil
}

// interruptPoll is how often a script waiting for its next line (commands
// piped on stdin by a program that has not sent more) looks for Ctrl-C.
const interruptPoll = 50 * time.Millisecond

// scriptLines reads sc's lines in a goroutine of their own, so that a
// script waiting for its next line sees Ctrl-C: next returns the line (ok
// false at the end, where sc.Err says why) or intr when Ctrl-C came while
// it waited. Read on the loop's goroutine, commands piped on stdin from a
// program that sent no more (`cat | hsdb`, a launcher's pipe) kept hsdb in
// read(2): Ctrl-C printed "stopping the script" and hsdb went on waiting,
// a second one later than a second the same. stop ends the goroutine once
// its read returns (stdin's may never: the process ends instead).
func (t *Term) scriptLines(sc *bufio.Scanner) (next func() (text string, ok, intr bool), stop func()) {
	type line struct {
		text string
		ok   bool
	}
	ch := make(chan line)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			l := line{ok: sc.Scan()}
			if l.ok {
				l.text = sc.Text()
			}
			select {
			case ch <- l:
			case <-done:
				return
			}
			if !l.ok {
				return
			}
		}
	}()
	tick := time.NewTicker(interruptPoll)
	next = func() (string, bool, bool) {
		for {
			select {
			case l, open := <-ch:
				return l.text, l.ok && open, false
			case <-tick.C:
				if t.interrupted.Load() {
					return "", false, true
				}
			}
		}
	}
	return next, func() { tick.Stop(); close(done) }
}

// scanScriptLines is bufio.ScanLines that also ends a line at a lone CR
// (classic Mac OS line ends, as Python's universal newlines read them):
// with ScanLines a script saved with CR line ends was one line, its CRs
// dropped, so "echo a\recho b\rrun" echoed "aecho brun" and ran nothing
// else, exit status 0. LF, CRLF and CR each end one line.
func scanScriptLines(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		switch b {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // is it CRLF? read on
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Source runs the script at path (the `source` command and `hsdb -x`). A
// script that is already running (it sources itself, directly or through
// others) is an error naming the chain.
func (t *Term) Source(path string) error {
	key := path
	if abs, err := filepath.Abs(path); err == nil {
		key = abs
	}
	for _, s := range t.sourcing {
		if s == key {
			return fmt.Errorf("source %s: it is already running (%s → %s): a script cannot source itself", path, strings.Join(t.scripts, " → "), path)
		}
	}
	f, err := regfile.OpenInput(path) // a named pipe or device is refused, not waited on
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer f.Close()
	t.sourcing = append(t.sourcing, key)
	defer func() { t.sourcing = t.sourcing[:len(t.sourcing)-1] }()
	return t.RunScript(f, path)
}
