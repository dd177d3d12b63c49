package worker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/safetensors"
)

// peerDelayEnv makes a test's worker in slot S sleep MS milliseconds
// before every peer frame of op OP it sends ("S:OP:MS").
const peerDelayEnv = "HSDB_TEST_PEER_DELAY"

// peerDelayFromEnv sets beforePeerSend in a test's worker process as
// peerDelayEnv says (peerFaultFromEnv may wrap it).
func peerDelayFromEnv() {
	parts := strings.Split(os.Getenv(peerDelayEnv), ":")
	if len(parts) != 3 {
		return
	}
	slot, _ := strconv.Atoi(parts[0])
	op, _ := strconv.Atoi(parts[1])
	ms, _ := strconv.Atoi(parts[2])
	beforePeerSend = func(s int, o byte) {
		if s == slot && int(o) == op {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
	}
}

// killSlotAt is a hook that SIGKILLs a worker the first time a site is
// reached and waits until Linux shows it gone.
type killSlotAt struct {
	site string
	pid  int
	once sync.Once
}

func (k *killSlotAt) Want(ev *model.Event) bool {
	if ev.Site.Path == k.site {
		k.once.Do(func() {
			syscall.Kill(k.pid, syscall.SIGKILL)
			for end := time.Now().Add(5 * time.Second); !procGone(k.pid) && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
		})
	}
	return false
}

func (k *killSlotAt) Visit(*model.Event, []*model.RankView) error { return nil }

// TestPipelineDeadPeerNamed: --pp 2 --tp 2 over direct links; rank 1 of
// stage 1 (slot 3) is killed while stage 0 computes, and rank 1 of
// stage 0 (slot 1) is slow to hand its rows on, so that rank 0 of stage 1
// (slot 2) finds its link to slot 3 ended and answers the front first,
// and rank 1's chain is aborted before the front ever talks to slot 3.
// The step's error must name the dead worker (rank 1 of stage 1, "the
// worker died"), not slot 2's abort; the next prefill replaces it and
// runs. Fails without Front.deadPeer (the error is rank 0 of stage 1's).
func TestPipelineDeadPeerNamed(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs Linux's /proc to see the worker gone")
	}
	t.Setenv(peerDelayEnv, fmt.Sprintf("1:%d:500", peerPipe))
	e, f := openWorkers(t, "../../testdata/hf/llama", engine.Options{TP: 2}, Config{PP: 2, Timeout: time.Minute})
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	seqs := enginetest.HFSeqs(t, ref)
	pid := f.slot(3).proc.cmd.Process.Pid
	_, err = e.Prefill(seqs, &killSlotAt{site: "model.layers.0", pid: pid}, true)
	if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1 of stage 1") || !strings.Contains(err.Error(), "the worker died") {
		t.Fatalf("prefill with slot 3 killed: %v; want rank 1 of stage 1's death", err)
	}
	if _, err := e.Prefill(seqs, nil, true); err != nil {
		t.Fatalf("prefill after the replacement: %v", err)
	}
}
