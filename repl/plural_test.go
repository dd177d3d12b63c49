package repl

import (
	"strings"
	"testing"
)

// TestOneIsSingular: a session of one sequence of one token at tp 1
// printed "1 sequence(s), 1 tokens", "(1 site(s))", "seq 0: 1 tokens",
// "1 decode step(s)", "dumped 1 sequence(s) (1 tokens)", "1 sequences, 1
// expected", check's "1 layers: 1", "1 sequences" and "1 files", "the
// world has 1 rank(s), 0-0" and "1 command(s) of … failed". Each line is English as
// written by hand here: the singular for one, the plural otherwise.
func TestOneIsSingular(t *testing.T) {
	f := newFake(t, 1)
	f.AssertExec("input ids 1", "batch: 1 sequence, 1 token (seq 0: 1)\n")
	f.AssertExec("break layers.2", "Breakpoint 1 at layers.2 (1 site)\n")
	f.AssertExec("break layers.*.mlp", "Breakpoint 2 at layers.*.mlp (5 sites)\n")
	f.Exec("delete")
	f.Exec("capture layers 1")
	out := f.AssertExec("run", "Finished: prefill\n", "  seq 0: 1 token, next ")
	if strings.Contains(out, "1 tokens") {
		t.Fatalf("run:\n%s", out)
	}
	f.AssertExec("gen 1", "Finished: 1 decode step\n", "  seq 0: 2 tokens, generated [")
	f.AssertExec("gen 2", "Finished: 2 decode steps\n")
	f.Exec("capture clear")
	f.Exec("capture layers 1")
	f.Exec("run")
	d := t.TempDir() + "/d"
	f.AssertExec("dump "+d, "dumped 1 sequence (1 token) to ", "pass  sequence count    1 sequence, 1 expected\n", "1 of 1 file re-read")
	f.AssertExec("check "+d+" --layers 1", "pass  layer count       1 layer: 1\n", "(stream), f32, 1 sequence\n",
		"pass  files             1 file, as the manifest lists\n", "  1 file: 1 valid, 0 invalid, 0 unreadable\n")
	f.Exec("break layers.1")
	f.Exec("run")
	f.AssertError("print stream --rank 1", "rank 1: the world has 1 rank (tp 1): rank 0 only")
	f.buf.Reset()
	err := f.RunScript(strings.NewReader("set errors continue\nprint nothing\necho after\n"), "one.hsdb")
	if err == nil || !strings.Contains(err.Error(), "1 command of one.hsdb failed") {
		t.Fatalf("script with one failing command: %v", err)
	}
}
