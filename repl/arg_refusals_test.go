package repl

import (
	"strings"
	"testing"
)

// TestUndisplayBadNumberTalksAboutDisplays: a bad number names displays
// for undisplay, breakpoints for delete/enable/disable and edits for
// delete edits.
func TestUndisplayBadNumberTalksAboutDisplays(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("undisplay abc", `undisplay: "abc" is not a display number (`+"`info display`")
	f.AssertError("delete abc", `delete: "abc" is not a breakpoint number (`+"`info break`")
	f.AssertError("disable 0", `disable: "0" is not a breakpoint number`)
	f.AssertError("delete edits 1 x", `delete edits: "x" is not an edit number (`+"`info edits`")
}

// TestSliceFlagErrors: an unknown flag is called unknown even without a
// value after it, a flag given twice is refused (not silently the last),
// and a missing value is named.
func TestSliceFlagErrors(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.0")
	f.Exec("run")
	for line, want := range map[string]string{
		"print stream --bogus":                   "print: unknown flag --bogus (want --rank, --seq or --tokens; --head for attn_probs)",
		"hist stream --bogus=1":                  "hist: unknown flag --bogus",
		"print stream --rank 0 --rank 1":         "print: --rank given twice: give it once",
		"top stream --seq 0 --seq=1":             "top: --seq given twice",
		"print stream --tokens 0:1 --tokens 2:3": "--tokens given twice",
		"print stream --rank":                    "print: --rank needs a value",
	} {
		f.AssertError(line, want)
	}
	// One of each is fine: rank 1 only.
	if rows := tableRows(f.Exec("print stream --rank 1 --seq 0")); len(rows) != 3 || rows[2][0] != "1" {
		t.Fatalf("%v", rows)
	}
}

// TestDisplayValidatedAtDisplayTime: a display whose rank is outside the
// world or whose tensor no site shows is refused when it is set, and no
// display is added.
func TestDisplayValidatedAtDisplayTime(t *testing.T) {
	f := newFake(t, 2)
	f.AssertError("display stream --rank 9", "display: rank out of range: rank 9: the world has 2 ranks, 0-1")
	f.AssertError("display nosuch", `display: no such tensor: no site shows a tensor named "nosuch"`)
	f.AssertError("display stream extra", `display: unexpected "extra"`)
	f.AssertExec("info display", "no displays")
	f.AssertExec("display stream --rank 1", "display 1: print stream --rank 1")
}

// TestBreakRankOutOfRangeRejected: at world size 2 a condition that needs
// rank 3 (or any rank outside 0-1) can never fire and is refused; one that
// may hold on a rank is kept, also when rank is only one side of ||.
func TestBreakRankOutOfRangeRejected(t *testing.T) {
	f := newFake(t, 2)
	for _, cond := range []string{"rank == 3", "3 == rank", "rank >= 2", "rank < 0", "absmax(stream) > 1 && rank == 2", "rank == 0.5"} {
		f.AssertError("break layers.2 if "+cond, "rank out of range: condition \""+cond+"\" can never hold")
	}
	f.AssertError("watch stream rank == 7 && absmax > 1", "can never hold: rank == 7 is false on every rank of this world of 2 (ranks 0-1)")
	f.AssertExec("break layers.2 if rank == 1", "Breakpoint 1 at layers.2")
	f.AssertExec("break layers.2 if rank == 3 || nan", "Breakpoint 2 at layers.2")
	f.AssertExec("break layers.2 if rank != 3", "Breakpoint 3 at layers.2")
	f.AssertExec("info break", "rank == 1", "rank != 3")
	if out := f.Exec("info break"); strings.Contains(out, "rank == 3\n") {
		t.Fatalf("refused breakpoint kept:\n%s", out)
	}
}

// TestBreakUnicodeNamedAsTyped: a non-ASCII site or condition is reported
// with the character the user typed and its column in characters.
func TestBreakUnicodeNamedAsTyped(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("break ünïcødé", `site "ünïcødé": unexpected 'ü' in component "ünïcødé"`)
	f.AssertError("break layers.ü", `unexpected 'ü'`)
	f.AssertError("break layers.1 if absmax(stream) > 1 && é", `column 23: unexpected character 'é'`)
}
