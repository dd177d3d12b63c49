package repl

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestQuitKeepsFailureStatus: under `set errors continue` a failed command
// makes the exit status 1 even when the script ends with quit, also when
// the failure was in a sourced script; a clean script that quits exits 0.
func TestQuitKeepsFailureStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, text)
		return p
	}
	inner := write("inner.hsdb", "set errors continue\nprint nothing\necho inner done\n")
	for _, tc := range []struct {
		name, text string
		code       int
	}{
		{"fail-then-quit", "set errors continue\nprint stream\necho still here\nquit\necho never\n", 1},
		{"fail-no-quit", "set errors continue\nprint stream\necho still here\n", 1},
		{"nested-fail-then-quit", "source " + inner + "\nquit\n", 1},
		{"clean-quit", "echo hi\nquit\necho never\n", 0},
	} {
		code, out, _ := runScript(t, 1, write(tc.name+".hsdb", tc.text), false)
		if code != tc.code || strings.Contains(out, "never") {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, tc.code, out)
		}
	}
}

// TestScriptInterruptStopsScript: Ctrl-C while a script's `run` is
// tracing stops the pass at the next site and then the script: the
// commands after it do not run and the exit status is 130.
func TestScriptInterruptStopsScript(t *testing.T) {
	f := newFake(t, 2)
	show := f.s.OnTrace
	n := 0
	f.s.OnTrace = func(l client.TraceLine) {
		if n++; n == 20 {
			f.Term.interrupt(true)
		}
		show(l)
	}
	f.buf.Reset()
	err := f.RunScript(strings.NewReader(batchCmd+"\ntrace on\nrun\necho after\n"), "x.hsdb")
	out := f.buf.String()
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(out, "[interrupted]") || strings.Contains(out, "after") {
		t.Fatalf("err %v\n%s", err, out)
	}
	if code := f.exitStatus(err, true); code != 130 {
		t.Fatalf("exit status %d, want 130", code)
	}
	// In the REPL the same interrupt keeps the session: the next command
	// starts afresh.
	f.interrupted.Store(false)
	f.s.OnTrace = show
	f.AssertExec("trace off", "trace off")
	f.AssertExec("c", "Finished: prefill")
}

// TestSelfSourcingScriptOneError: a script that sources itself fails once,
// with one error naming the recursion, whether errors stop the script or
// not; the exit status is 1.
func TestSelfSourcingScriptOneError(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []string{"stop", "continue"} {
		p := filepath.Join(dir, "self-"+mode+".hsdb")
		writeFile(t, p, "set errors "+mode+"\necho start\nsource "+p+"\necho end\n")
		code, out, errs := runScript(t, 1, p, false)
		if code != 1 || strings.Count(out, "error: ") != 1 || !strings.Contains(out, "is already running") || strings.Count(out, "\nstart\n") != 1 {
			t.Fatalf("errors %s: exit %d\n%s\n%s", mode, code, out, errs)
		}
		if ends := strings.Count(out, "\nend\n"); (mode == "continue") != (ends == 1) {
			t.Fatalf("errors %s: 'end' printed %d times\n%s", mode, ends, out)
		}
	}
	// Through another file: a.hsdb → b.hsdb → a.hsdb.
	a, b := filepath.Join(dir, "a.hsdb"), filepath.Join(dir, "b.hsdb")
	writeFile(t, a, "source "+b+"\n")
	writeFile(t, b, "source "+a+"\n")
	code, out, _ := runScript(t, 1, a, false)
	if code != 1 || strings.Count(out, "error: ") != 1 || !strings.Contains(out, a+" → "+b+" → "+a) {
		t.Fatalf("a→b→a: exit %d\n%s", code, out)
	}
}
