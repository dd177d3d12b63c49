package worker

import (
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/enginetest"
)

// TestStoppedWorkerReplacedAtStep: a worker stopped by SIGSTOP after a
// pass has ended (so the front is not waiting on it) is ended and
// replaced when the next prefill begins, with a line saying so, instead
// of that prefill failing on the stopped worker after the timeout; the
// fresh worker computes the first prefill's logits. On both link modes.
func TestStoppedWorkerReplacedAtStep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the front reads a worker's stopped state from Linux's /proc")
	}
	for _, hub := range []bool{false, true} {
		t.Run("hub="+strconv.FormatBool(hub), func(t *testing.T) {
			var log strings.Builder
			e, f := openWorkers(t, "../../testdata/hf/llama", engine.Options{TP: 2}, Config{Hub: hub, Timeout: 30 * time.Second, Log: &syncWriter{b: &log}})
			seqs := [][]int32{{1, 5, 9, 13}, {2, 4}}
			first, err := e.Prefill(seqs, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			pid := f.PID(1)
			syscall.Kill(pid, syscall.SIGSTOP)
			defer syscall.Kill(pid, syscall.SIGKILL)
			for i := 0; !procStopped(pid); i++ {
				if i == 500 {
					t.Fatalf("worker %d not stopped a second after SIGSTOP", pid)
				}
				time.Sleep(2 * time.Millisecond)
			}
			t0 := time.Now()
			again, err := e.Prefill(seqs, nil, false)
			if err != nil {
				t.Fatalf("prefill after rank 1's worker was stopped: %v", err)
			}
			if d := time.Since(t0); d > 15*time.Second {
				t.Errorf("the prefill took %s: it waited on the stopped worker", d)
			}
			if err := enginetest.CheckClose(again.Values.F32(), first.Values.F32(), 0); err != nil {
				t.Errorf("logits from the fresh worker: %v", err)
			}
			if f.PID(1) == pid {
				t.Errorf("rank 1 still has the stopped worker's pid %d", pid)
			}
			want := "rank 1's worker was ended: "
			if got := log.String(); !strings.Contains(got, want) || !strings.Contains(got, "stopped by a signal") || !strings.Contains(got, "starting a fresh one") {
				t.Errorf("the front's log:\n%s\nwant %q… stopped by a signal … starting a fresh one", got, want)
			}
			for i := 0; !procGone(pid); i++ {
				if i == 200 {
					t.Fatalf("the stopped worker %d still runs", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
