package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDTypeMessage: `hsdb --dtype f8` answered with every dtype
// the tensor package parses (i64, bool, ...), which --dtype then refuses;
// a name that is no dtype and one the weights cannot be kept in now get
// the same one line listing what --dtype takes.
func TestDTypeMessage(t *testing.T) {
	for _, v := range []string{"f8", "i64", "bool"} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{"generate", "--dtype", v, "--ids", "1"}, stdio{Out: &out, Err: &errOut})
		want := `--dtype "` + v + `": weights can be kept as f32, bf16 or f16`
		if code == 0 || !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "i64, i32") {
			t.Errorf("--dtype %s: exit %d, stderr %q; want %q", v, code, errOut.String(), want)
		}
	}
}

// TestCaptureCountFlags: `hsdb capture --writers -1` crashed (a
// panic making the writers' channel) and --max-batch-tokens 0 or -5 was
// taken silently for 4096; each is now refused naming the flag and its
// range, before the model loads.
func TestCaptureCountFlags(t *testing.T) {
	out := t.TempDir() + "/o"
	for _, c := range []struct {
		flag, val, want string
	}{
		{"--writers", "-1", "--writers -1: want 1 to 256"},
		{"--writers", "100000", "--writers 100000: want 1 to 256"},
		{"--max-batch-tokens", "0", "--max-batch-tokens 0: want at least 1"},
		{"--max-batch-tokens", "-5", "--max-batch-tokens -5: want at least 1"},
	} {
		var o, errOut bytes.Buffer
		code := hsdbMain([]string{"capture", "--layers", "1", "--ids", "1,2", "--out", out, c.flag, c.val}, stdio{Out: &o, Err: &errOut})
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%s %s: exit %d, stderr %q; want 2 and %q", c.flag, c.val, code, errOut.String(), c.want)
		}
	}
}
