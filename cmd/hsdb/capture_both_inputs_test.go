package main

import (
	"strings"
	"testing"
)

// TestCaptureIdsAndDataBoth: `hsdb capture --ids 0,5 --data F --out D`
// said "need --out and one of --ids or --data", though --out was given and
// the fault is that both inputs were; it now says so, exit 2, before
// anything is read (F does not exist), as generate refuses --ids with
// --prompt.
func TestCaptureIdsAndDataBoth(t *testing.T) {
	_, errs, code := runHsdb(t, "capture", "--ids", "0,5", "--data", "missing.jsonl", "--out", t.TempDir()+"/d")
	if code != 2 || !strings.Contains(errs, "hsdb capture: --ids and --data both given") || strings.Contains(errs, "need --out") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	_, errs, code = runHsdb(t, "capture", "--ids", "0,5")
	if code != 2 || !strings.Contains(errs, "need --out and one of --ids or --data") {
		t.Errorf("no --out: exit %d, stderr %q", code, errs)
	}
}
