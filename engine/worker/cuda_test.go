package worker

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
)

// requireCUDAWorkers skips unless this build has CUDA and a GPU: it loads
// the embedded model in process on --device cuda.
func requireCUDAWorkers(t *testing.T) {
	t.Helper()
	e, err := engine.Open("", engine.Options{TP: 1, Device: "cuda"})
	if err != nil {
		if errors.Is(err, engine.ErrDevice) {
			t.Skipf("no cuda backend here: %v", err)
		}
		t.Fatal(err)
	}
	e.Close()
}

// TestCUDAWorkersHFParity: with every rank in a CUDA worker process
// (collectives host-staged through the front), each layer's stream on
// every rank and the logits equal HF transformers' float32 values within
// 1e-4 of max |value| (the CUDA backend's tolerance in engine's parity
// tests), and the in-process CUDA ranks' within the same.
func TestCUDAWorkersHFParity(t *testing.T) {
	requireCUDAWorkers(t)
	for _, c := range []struct {
		name   string
		tp, pp int
	}{{"llama", 1, 1}, {"llama", 2, 1}, {"qwen3", 2, 1}, {"deepseek_v3", 2, 1}, {"llama", 2, 2}} {
		t.Run(fmt.Sprintf("%s/tp%d/pp%d", c.name, c.tp, c.pp), func(t *testing.T) {
			checkWorkersParity(t, c.name, engine.Options{TP: c.tp, Device: "cuda"}, Config{PP: c.pp}, 1e-4)
		})
	}
}

// killOnce SIGKILLs pid the first time any rank reaches site.
type killOnce struct {
	site string
	pid  int
	done bool
}

func (k *killOnce) Want(ev *model.Event) bool {
	if ev.Site.Path == k.site && !k.done {
		k.done = true
		syscall.Kill(k.pid, syscall.SIGKILL)
	}
	return false
}

func (k *killOnce) Visit(*model.Event, []*model.RankView) error { return nil }

// TestCUDAWorkerKilled: a CUDA worker killed mid-pass fails the pass with
// its rank; the next prefill starts a fresh CUDA worker and computes the
// logits of the first.
func TestCUDAWorkerKilled(t *testing.T) {
	requireCUDAWorkers(t)
	e, f := openWorkers(t, "../../testdata/hf/llama", engine.Options{TP: 2, Device: "cuda"}, Config{Timeout: time.Minute})
	seqs := [][]int32{{1, 5, 9, 13}, {2, 4}}
	first, err := e.Prefill(seqs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Prefill(seqs, &killOnce{site: "model.layers.1", pid: f.PID(1)}, false)
	if !errors.Is(err, engine.ErrWorker) || !strings.Contains(err.Error(), "rank 1") {
		t.Fatalf("prefill with a killed worker: %v", err)
	}
	again, err := e.Prefill(seqs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.CheckClose(again.Values.F32(), first.Values.F32(), 1e-6); err != nil {
		t.Errorf("logits after the restart: %v", err)
	}
}

// TestCUDAWorkersPrefillTime prints the time of a prefill through CUDA
// workers against in-process CUDA ranks in the same run (no assertion:
// a measurement, see the GPU notes).
func TestCUDAWorkersPrefillTime(t *testing.T) {
	requireCUDAWorkers(t)
	dir := "../../testdata/hf/llama"
	seqs := make([][]int32, 8)
	for s := range seqs {
		for i := range 128 {
			seqs[s] = append(seqs[s], int32(1+(s*31+i*7)%100)) // the fixture's vocabulary is 101
		}
	}
	local, err := engine.Open(dir, engine.Options{TP: 2, Device: "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, _ := openWorkers(t, dir, engine.Options{TP: 2, Device: "cuda"}, Config{})
	var hooked model.MultiHook = model.MultiHook{noSites{}}
	for _, h := range []model.Hook{nil, hooked} {
		var ns [2]time.Duration
		for k, e := range []*engine.Engine{local, remote} {
			if _, err := e.Prefill(seqs, h, false); err != nil { // warm-up
				t.Fatal(err)
			}
			start := time.Now()
			for range 10 {
				if _, err := e.Prefill(seqs, h, false); err != nil {
					t.Fatal(err)
				}
			}
			ns[k] = time.Since(start) / 10
		}
		t.Logf("prefill 8×128 tokens, tp 2, hook %v: in process %v, workers %v, ratio %.3f", h != nil, ns[0], ns[1], float64(ns[1])/float64(ns[0]))
	}
}
