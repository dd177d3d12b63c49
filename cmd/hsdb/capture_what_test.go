package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCaptureWhatCheckedBeforeLoad: `hsdb capture --what residual` (or
// hidden_states) with --format speculators or specforge was refused only
// after the model loaded, though the flags alone decide it: their files
// hold the residual stream. With a --model that cannot load at all, the
// answer is still about --what and --format (exit 2, as for --layers), and
// the stream (the default) gets past the check to the model path, which
// is then named as missing (exit 2 too: a usage error, TestInputPathsExit2).
func TestCaptureWhatCheckedBeforeLoad(t *testing.T) {
	missing := t.TempDir() + "/no-such-model"
	for _, c := range []struct {
		format, what string
		code         int
		want         string
	}{
		{"speculators", "residual", 2, "--what residual: --format speculators files hold the residual stream (hidden_states + residual)"},
		{"specforge", "hidden_states", 2, "--what hidden_states: --format specforge files hold the residual stream"},
		{"specforge", "stream", 2, "--model " + missing + ": stat"},
	} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{"capture", "--model", missing, "--format", c.format, "--what", c.what, "--layers", "0,1", "--ids", "1,2", "--out", t.TempDir() + "/d"}, stdio{Out: &out, Err: &errOut})
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("--format %s --what %s: exit %d, stderr %q; want %d and %q", c.format, c.what, code, errOut.String(), c.code, c.want)
		}
		if c.what != "stream" && strings.Contains(errOut.String(), "no-such-model") {
			t.Errorf("--format %s --what %s: the model was opened before the refusal: %q", c.format, c.what, errOut.String())
		}
	}
}
