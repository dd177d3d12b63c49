package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestNewUser_DTypeMessage: `hsdb --dtype f8` answered with every dtype
// the tensor package parses (i64, bool, ...), which --dtype then refuses;
// a name that is no dtype and one the weights cannot be kept in now get
// the same one line listing what --dtype takes.
func TestNewUser_DTypeMessage(t *testing.T) {
	for _, v := range []string{"f8", "i64", "bool"} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{"generate", "--dtype", v, "--ids", "1"}, stdio{Out: &out, Err: &errOut})
		want := `--dtype "` + v + `": weights can be kept as f32, bf16 or f16`
		if code == 0 || !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "i64, i32") {
			t.Errorf("--dtype %s: exit %d, stderr %q; want %q", v, code, errOut.String(), want)
		}
	}
}
