package main

import (
	"strings"
	"testing"
)

// TestBadModelFlagValueExits2: a model-group or worker flag with a value it
// does not take is a bad flag, exit 2, in the debugger, generate and capture
// as in plan, check and diff (`hsdb --help`: "2 for bad flags"); the three
// exited 1, as for a model that did not load.
func TestBadModelFlagValueExits2(t *testing.T) {
	for _, cmd := range [][]string{{"-x", "/dev/null"}, {"generate", "--ids", "1,2"}, {"capture", "--ids", "1,2", "--layers", "0", "--out", t.TempDir() + "/d"}} {
		for _, c := range []struct{ flag, value, want string }{
			{"--device", "gpu", `--device "gpu": want cpu or cuda`},
			{"--dtype", "fp8", `--dtype "fp8": weights can be kept as`},
			{"--tp", "0", "--tp 0: the world size must be at least 1"},
			{"--moe", "foo", `--moe "foo": want tp or ep`},
			{"--load-layers", "x", `--load-layers "x": want A-B`},
			{"--pp", "0", "--pp 0: want at least one stage"},
		} {
			args := append(append([]string{}, cmd...), c.flag, c.value)
			_, errs, code := runHsdb(t, args...)
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", args, code, errs, c.want)
			}
		}
	}
}
