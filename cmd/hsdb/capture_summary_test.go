package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureSummaryListsAsTyped: capture's summary line wrote ids and
// layers as Go prints a slice and the dtype in safetensors' spelling
// ("speculators ids [1 2 3] (hsdb layers [0 1 2]), BF16"); it writes them
// as --layers and --dtype take them: speculators ids 1,2,3 are hsdb layers
// 0,1,2 (id k = layer k-1's output), bf16 by default.
func TestCaptureSummaryListsAsTyped(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := runHsdb(t, "capture", "--format", "speculators", "--layers", "1,2,3", "--ids", "1,403,407", "--out", filepath.Join(dir, "s"))
	if code != 0 || !strings.Contains(out, "speculators ids 1,2,3 (hsdb layers 0,1,2), bf16,") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = runHsdb(t, "capture", "--layers", "0,2", "--ids", "1,403,407", "--out", filepath.Join(dir, "h"))
	if code != 0 || !strings.Contains(out, "layers 0,2 (stream), f32,") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}
