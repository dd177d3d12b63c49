package repl

import "testing"

// TestSetStatsSpaces: `set stats mean absmax nan` (statistics separated by
// spaces, as `print` prints them) was refused as one statistic named
// "mean absmax nan"; spaces separate them as commas do.
func TestSetStatsSpaces(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("set stats mean absmax nan")
	f.AssertExec("show stats", "mean,absmax,nan")
	f.Exec("set stats std, l2")
	f.AssertExec("show stats", "std,l2")
	f.AssertError("set stats mean median", `statistic "median"`)
	f.AssertError("set stats ,", "want some of mean")
}
