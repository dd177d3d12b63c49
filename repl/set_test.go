package repl

import (
	"strconv"
	"strings"
	"testing"
)

// TestSetRejectedValueKeepsOld: a `set` whose value is rejected leaves the
// option as it was: `show` reports the old value, print keeps its digits and
// hist its bins.
func TestSetRejectedValueKeepsOld(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.Exec("run")
	f.Exec("set precision 6")
	f.Exec("set bins 7")
	f.Exec("set width 30")
	f.Exec("set echo off")
	f.Exec("set colour off")
	f.Exec("set stats mean,absmax")
	for _, tc := range []struct{ set, show, want string }{
		{"set precision abc", "precision", "6"},
		{"set precision 0", "precision", "6"},
		{"set bins 0", "bins", "7"},
		{"set bins -3", "bins", "7"},
		{"set width 5", "width", "30"},
		{"set echo x", "echo", "off"},
		{"set json maybe", "json", "off"},
		{"set colour blue", "colour", "off"},
		{"set stats mean,median", "stats", "mean,absmax"},
		{"set errors sometimes", "errors", "stop"},
	} {
		f.AssertError(tc.set, "want")
		rows := tableRows(f.Exec("show " + tc.show))
		if len(rows) != 2 || rows[1][0] != tc.show || rows[1][1] != tc.want {
			t.Fatalf("%s: show %s gives %v, want value %s", tc.set, tc.show, rows, tc.want)
		}
	}
	// print: the mean printed with 6 significant digits equals the
	// reference's mean rounded to 6 digits (two-pass, by hand).
	want := twoPass(reference(t, 1, "model.layers.1").got["stream"][0].F32())
	row := tableRows(f.Exec("print stream"))[2]
	if w := strconv.FormatFloat(want["mean"], 'g', 6, 64); row[5] != w {
		t.Fatalf("print stream mean %q, want %q (6 digits)", row[5], w)
	}
	// hist: 7 buckets, one line each after the two heading lines.
	out := f.Exec("hist stream")
	if n := strings.Count(out, "\n") - 2; n != 7 {
		t.Fatalf("hist has %d bucket lines, want 7:\n%s", n, out)
	}
}
