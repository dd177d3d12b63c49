package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureLongerThanBatchSaid: a sequence longer than --max-batch-tokens
// is captured in a pass of its own length (here 6 tokens at 3), which the
// flag's help did not say: it read as a bound on every pass, which a memory
// plan (`plan --max-tokens`) would take it for.
func TestCaptureLongerThanBatchSaid(t *testing.T) {
	out, errs, code := runHsdb(t, "capture", "--help")
	if code != 0 || !strings.Contains(out, "a longer sequence runs alone, in a pass of its own length") {
		t.Errorf("capture --help: exit %d, %s%s", code, out, errs)
	}
	out, errs, code = runHsdb(t, "capture", "--ids", "1,2,3,4,5,6;7,8", "--layers", "0", "--max-batch-tokens", "3", "--out", filepath.Join(t.TempDir(), "d"))
	if code != 0 || !strings.Contains(out, "2 of 2 files re-read and validated") {
		t.Errorf("capture of a 6-token row at --max-batch-tokens 3: exit %d\n%s%s", code, out, errs)
	}
}
