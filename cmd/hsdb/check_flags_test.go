package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDiffTakeTheWorkerFlags: check and diff list the model group's
// worker flags (--workers, --worker-bin, --pp, --worker-links) and must
// use them as capture and generate do, not ignore them: each refusal
// below is what `hsdb capture` says for the same flags, and a worker
// binary that does not exist is named instead of the model running in
// process regardless. A flag's bad value fails every command; a model
// that cannot start (no worker binary, --pp without workers) fails
// capture and diff, and check says so and goes on from config.json
// alone, as for any model that does not load. plan, which starts no
// worker, refuses the bad values alike; --worker-timeout 0 or below is a
// bad value (worker.Config would silently take its 10m default), and
// --device other than cpu or cuda is refused by every command (plan
// planned it as cuda).
func TestCheckDiffTakeTheWorkerFlags(t *testing.T) {
	model := "../../testdata/hf/llama"
	dump := filepath.Join(t.TempDir(), "d")
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"capture", "--model", model, "--ids", "1,5,7,9;1,4", "--layers", "0,1", "--out", dump}, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errOut.String())
	}
	bin := filepath.Join(t.TempDir(), "no-such-hsdb")
	for _, c := range []struct {
		flags    []string
		want     string
		badValue bool
	}{
		{[]string{"--pp", "0"}, "--pp 0: want at least one stage", true},
		{[]string{"--worker-links", "bogus"}, `--worker-links "bogus": want direct or hub`, true},
		{[]string{"--workers", "--worker-timeout", "-1s"}, "--worker-timeout -1s: want a positive duration", true},
		{[]string{"--workers", "--worker-timeout", "0s"}, "--worker-timeout 0s: want a positive duration", true},
		{[]string{"--device", "tpu"}, `--device "tpu": want cpu or cuda`, true},
		{[]string{"--pp", "2"}, "--pp 2: pipeline stages run in workers", false},
		{[]string{"--workers", "--worker-bin", bin}, bin, false},
	} {
		for _, cmd := range []string{"capture", "check", "diff", "plan"} {
			args := []string{cmd, "--model", model, "--layers", "0,1"}
			if cmd == "plan" {
				if !c.badValue {
					continue // plan starts nothing
				}
				args = []string{cmd, "--model", model}
			}
			if cmd == "capture" {
				args = append(args, "--ids", "1,5,7,9", "--out", filepath.Join(t.TempDir(), "c"))
			} else if cmd != "plan" {
				args = append(args, dump)
			}
			out.Reset()
			errOut.Reset()
			code := hsdbMain(append(args, c.flags...), stdio{Out: &out, Err: &errOut})
			mustFail := cmd != "check" || c.badValue
			want := c.want
			if cmd == "plan" && strings.HasPrefix(c.flags[0], "--worker") { // plan starts no worker: it takes none of their flags
				want = "unknown flag " + c.flags[0]
			}
			if (mustFail && code == 0) || !strings.Contains(errOut.String(), want) {
				t.Errorf("%s %v: exit %d, stderr %q; want a failure naming %q", cmd, c.flags, code, errOut.String(), want)
			}
		}
	}
	// and without them both still pass the dump
	for _, cmd := range []string{"check", "diff"} {
		out.Reset()
		errOut.Reset()
		if code := hsdbMain([]string{cmd, "--model", model, "--layers", "0,1", dump}, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Errorf("%s: exit %d\n%s%s", cmd, code, out.String(), errOut.String())
		}
	}
}

// TestCheckSummaryAndFullRefused: --summary and --full name two report
// forms of a directory (usage: [--summary|--full]); given both, check and
// diff took --summary and dropped --full without a word. Now both refuse
// the pair, exit 2, naming the two flags.
func TestCheckSummaryAndFullRefused(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"check", "diff"} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{cmd, dir, "--model", "../../testdata/hf/llama", "--summary", "--full"}, stdio{Out: &out, Err: &errOut})
		if code != 2 || !strings.Contains(errOut.String(), "--summary and --full") {
			t.Errorf("%s --summary --full: exit %d, stderr %q, stdout %q; want exit 2 naming both flags", cmd, code, errOut.String(), out.String())
		}
	}
}
