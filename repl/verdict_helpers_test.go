package repl

import "strings"

// execVerdict runs a check or diff line and returns its output and
// whether the command failed on its verdict (the report printed, then the
// error "the verdict is not valid"); any other error fails the test.
func (f *fakeTerm) execVerdict(line string) (string, bool) {
	f.t.Helper()
	f.buf.Reset()
	err := f.Term.Exec(line)
	if err != nil && !strings.Contains(err.Error(), "the verdict is not valid") {
		f.t.Fatalf("%s: %v\noutput:\n%s", line, err, f.buf.String())
	}
	return f.buf.String(), err != nil
}

// assertVerdictFails runs a check or diff line whose verdict is not valid:
// it must fail on the verdict after printing a report holding every want.
func (f *fakeTerm) assertVerdictFails(line string, want ...string) string {
	f.t.Helper()
	out, failed := f.execVerdict(line)
	if !failed {
		f.t.Fatalf("%s: the verdict is not valid, yet the command did not fail:\n%s", line, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			f.t.Fatalf("%s: output lacks %q:\n%s", line, w, out)
		}
	}
	return out
}
