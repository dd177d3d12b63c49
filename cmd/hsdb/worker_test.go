package main

import (
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as `hsdb worker`: --workers starts
// workers by running this executable with "worker" first.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(hsdbMain(os.Args[1:], stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	os.Exit(m.Run())
}

// TestWorkersQuickstart: `hsdb --workers --tp 2 -x scripts/quickstart.hsdb`
// prints exactly what the same script prints with the ranks as goroutines
// (which TestQuickstartScript and the HF parity tests check): every
// statistic, gathered tensor, rank comparison, backtrace and the next
// tokens; also as JSON.
func TestWorkersQuickstart(t *testing.T) {
	for _, extra := range [][]string{nil, {"--json"}} {
		args := append([]string{"--tp", "2", "-x", "../../scripts/quickstart.hsdb"}, extra...)
		code, want, errs := runWithStdin(args, "")
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		code, got, errs := runWithStdin(append([]string{"--workers"}, args...), "")
		if code != 0 {
			t.Fatalf("--workers %v: exit %d\n%s\n%s", args, code, got, errs)
		}
		if got != want {
			t.Errorf("--workers %v prints otherwise:\n%s\nwithout --workers:\n%s", args, got, want)
		}
		end := "Finished: prefill"
		if extra != nil {
			end = `"kind":"done"`
		}
		if !strings.Contains(got, end) || !strings.Contains(got, "gathered") {
			t.Errorf("--workers %v: the script did not run to its end:\n%s", args, got)
		}
	}
}

// TestWorkerFlags: `hsdb worker` without --connect, or with a front that
// is not there, fails with a message and its exit status.
func TestWorkerFlags(t *testing.T) {
	if code, _, errs := runWithStdin([]string{"worker"}, ""); code != 2 || !strings.Contains(errs, "--connect") {
		t.Errorf("hsdb worker: exit %d, %q", code, errs)
	}
	if code, _, errs := runWithStdin([]string{"worker", "--connect", "127.0.0.1:1", "--dial-timeout", "1s"}, ""); code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("hsdb worker --connect to nothing: exit %d, %q", code, errs)
	}
}
