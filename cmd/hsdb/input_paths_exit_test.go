package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputPathsExit2: a file or directory named on the command line that
// is not there is a usage error, exit 2 with one line naming the flag and
// the path, as a bad flag, an unknown subcommand and check's missing
// capture file are. Before, `hsdb -x missing.hsdb`, a missing --model
// (hsdb, generate, capture, plan), a missing --worker-bin (said when the
// first worker failed to start) and convert's missing IN.bin or
// --tokenizer exited 1, the status of a model that failed to load; a
// capture --data was read only after a llama2.c model's load. Each case is
// paired with its flag and path, written here; none loads a model.
func TestInputPathsExit2(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	out := filepath.Join(dir, "out")
	bin := "../../testdata/stories260K/stories260K.bin"
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-x", missing + ".hsdb"}, "hsdb: -x: stat " + missing + ".hsdb: no such file or directory"},
		{[]string{"-x", dir}, "hsdb: -x " + dir + ": is a directory, not a script"},
		{[]string{"--model", missing}, "hsdb: --model " + missing + ": stat " + missing + ": no such file or directory"},
		{[]string{"generate", "--model", missing, "--ids", "1"}, "hsdb generate: --model " + missing + ": stat"},
		{[]string{"capture", "--model", missing, "--ids", "1,2", "--out", out}, "hsdb capture: --model " + missing + ": stat"},
		{[]string{"capture", "--model", bin, "--layers", "1,2,3,4", "--data", missing + ".jsonl", "--out", out}, "hsdb capture: --data: open " + missing + ".jsonl: no such file or directory"},
		{[]string{"plan", "--model", missing}, "hsdb plan: --model " + missing + ": stat"},
		{[]string{"--workers", "--worker-bin", missing, "-x", os.DevNull}, "hsdb: --worker-bin " + missing + ": stat " + missing + ": no such file or directory"},
		{[]string{"generate", "--workers", "--worker-bin", "no-such-hsdb-worker", "--ids", "1"}, `hsdb generate: --worker-bin no-such-hsdb-worker: executable file not found in $PATH`},
		{[]string{"convert", "llama2c", missing + ".bin", "--tokenizer", bin, "--out", out}, "hsdb convert llama2c: IN.bin: open " + missing + ".bin: no such file or directory"},
		{[]string{"convert", "llama2c", bin, "--tokenizer", missing + ".bin", "--out", out}, "hsdb convert llama2c: --tokenizer: open " + missing + ".bin: no such file or directory"},
	} {
		stdout, errs, code := runHsdb(t, c.args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line %q…", c.args, code, stdout, errs, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was made by a command refused for its input path", out)
	}
}
