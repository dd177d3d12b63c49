package worker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
)

// TestCUDAWorkerKernelFault: a kernel of rank 1's CUDA worker that writes
// to an unmapped address (KernelFaultEnv, once) ends that worker, not the
// session: the prefill fails with ErrWorker naming rank 1, the driver's
// CUDA_ERROR_ILLEGAL_ADDRESS and the site it was at; the next prefill
// starts a fresh worker and computes the logits the in-process CUDA ranks
// compute (within 1e-5 of max |logit|).
func TestCUDAWorkerKernelFault(t *testing.T) {
	requireCUDAWorkers(t)
	dir := "../../testdata/hf/llama"
	t.Setenv(KernelFaultEnv, "model.layers.1@1")
	t.Setenv(KernelFaultOnceEnv, filepath.Join(t.TempDir(), "fired"))
	e, _ := openWorkers(t, dir, engine.Options{TP: 2, Device: "cuda"}, Config{Timeout: time.Minute})
	seqs := [][]int32{{1, 5, 9, 13}, {2, 4}}
	hook := model.MultiHook{noSites{}} // no site asks the front: the worker's last words say where it was
	_, err := e.Prefill(seqs, hook, false)
	if !errors.Is(err, engine.ErrWorker) {
		t.Fatalf("prefill with a kernel fault: %v, want ErrWorker", err)
	}
	for _, w := range []string{"rank 1", "CUDA_ERROR_ILLEGAL_ADDRESS", "model.layers.1"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the report lacks %q: %v", w, err)
		}
	}
	t.Logf("reported: %v", err)
	again, err := e.Prefill(seqs, hook, false)
	if err != nil {
		t.Fatalf("prefill after the fault: %v", err)
	}
	local, err := engine.Open(dir, engine.Options{TP: 2, Device: "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	want, err := local.Prefill(seqs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.CheckClose(again.Values.F32(), want.Values.F32(), 1e-5); err != nil {
		t.Errorf("logits of the fresh worker vs in process: %v", err)
	}
}

// TestCUDAWorkersPrefill8B prints a prefill of 4 × 1024 tokens of the
// Llama-3-8B-shaped checkpoint in HSDB_BENCH_MODEL (scripts/bench/
// make_llama8b.py) at --tp 1 through a CUDA worker against the same on
// in-process CUDA ranks, in one run, alternating, with no hook and with a
// hook that wants no site (each site then asks the front, as in a
// debugging session); the logits of both agree within 1e-5. A
// measurement (issue 17's target: workers within 3 %), not an assertion.
func TestCUDAWorkersPrefill8B(t *testing.T) {
	dir := os.Getenv("HSDB_BENCH_MODEL")
	if dir == "" {
		t.Skip("HSDB_BENCH_MODEL is not set (scripts/bench/make_llama8b.py writes the checkpoint)")
	}
	requireCUDAWorkers(t)
	seqs := make([][]int32, 4)
	for s := range seqs {
		for i := range 1024 {
			seqs[s] = append(seqs[s], int32(1+(s*7919+i*104729)%128000))
		}
	}
	local, err := engine.Open(dir, engine.Options{TP: 1, Device: "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	cfg := Config{}
	if traceOn { // the workers' trace lines reach the test's stderr
		cfg.Log = os.Stderr
	}
	remote, _ := openWorkers(t, dir, engine.Options{TP: 1, Device: "cuda"}, cfg)
	const iters = 8
	for _, h := range []model.Hook{nil, model.MultiHook{noSites{}}} {
		var ns [2]time.Duration
		var out [2][]float32
		for k, e := range []*engine.Engine{local, remote} {
			l, err := e.Prefill(seqs, h, false) // warm-up
			if err != nil {
				t.Fatal(err)
			}
			out[k] = l.Values.F32()
		}
		for range iters {
			for k, e := range []*engine.Engine{local, remote} {
				start := time.Now()
				if _, err := e.Prefill(seqs, h, false); err != nil {
					t.Fatal(err)
				}
				ns[k] += time.Since(start)
			}
		}
		if err := enginetest.CheckClose(out[1], out[0], 1e-5); err != nil {
			t.Errorf("logits through the worker vs in process: %v", err)
		}
		t.Logf("prefill 4×1024 tokens, tp 1, hook %v: in process %.2f ms, worker %.2f ms, workers/in-process %.4f",
			h != nil, float64(ns[0])/iters/1e6, float64(ns[1])/iters/1e6, float64(ns[1])/float64(ns[0]))
	}
}

// momentsAtStop is a hook that stops at one site and there times the
// statistics of every rank's tensor name, reps times rank after rank and
// reps times with every rank at once (as the debugger's `print` computes
// them: inspect/debug rankMoments), each on the rank's device.
type momentsAtStop struct {
	site, name string
	reps       int
	seq, par   []float64
	err        error
}

func (m *momentsAtStop) Want(ev *model.Event) bool { return ev.Site.Path == m.site }

func (m *momentsAtStop) one(v *model.RankView) error {
	t, ok := v.Tensor(m.name)
	if !ok || t.T == nil {
		return errors.New("no device tensor " + m.name + " at " + m.site)
	}
	sh := t.T.Shape()
	if mo := v.Device.Moments(t.T, 0, sh[0], 0, sh[1]); mo.Count != int64(sh[0]*sh[1]) {
		return errors.New("moments counted a wrong number of values")
	}
	return nil
}

func (m *momentsAtStop) Visit(ev *model.Event, views []*model.RankView) error {
	for range m.reps {
		start := time.Now()
		for _, v := range views {
			if m.err = m.one(v); m.err != nil {
				return m.err
			}
		}
		m.seq = append(m.seq, float64(time.Since(start))/1e6)
	}
	for range m.reps {
		start := time.Now()
		errs := make([]error, len(views))
		var wg sync.WaitGroup
		for r, v := range views {
			wg.Go(func() { errs[r] = m.one(v) })
		}
		wg.Wait()
		if m.err = errors.Join(errs...); m.err != nil {
			return m.err
		}
		m.par = append(m.par, float64(time.Since(start))/1e6)
	}
	return errMeasured // the rest of the pass is not needed
}

// meanBest returns the mean and the least of v without its first value
// (which warms the pinned staging buffers).
func meanBest(v []float64) (mean, best float64) {
	rest := v[1:]
	best = rest[0]
	for _, x := range rest {
		mean, best = mean+x, min(best, x)
	}
	return mean / float64(len(rest)), best
}

// errMeasured ends the pass of TestCUDAWorkersStopMoments8 at its stop.
var errMeasured = errors.New("measured: pass ended at the stop")

// TestCUDAWorkersStopMoments8 prints the time of the statistics of
// hidden_states at a stop (model.layers.0) over 8 ranks, each a CUDA
// worker process on the one GPU, for 2 × 4096 tokens of HSDB_BENCH_MODEL
// (hidden 4096, bf16): each rank's moments computed on its worker's
// device, only the result crossing. A measurement (target ≤ 3 ms).
func TestCUDAWorkersStopMoments8(t *testing.T) {
	dir := os.Getenv("HSDB_BENCH_MODEL")
	if dir == "" {
		t.Skip("HSDB_BENCH_MODEL is not set (scripts/bench/make_llama8b.py writes the checkpoint)")
	}
	requireCUDAWorkers(t)
	t.Setenv("HSDB_CUDA_VIRTUAL", "1")
	seqs := make([][]int32, 2)
	for s := range seqs {
		for i := range 4096 {
			seqs[s] = append(seqs[s], int32(1+(s*7919+i*104729)%128000))
		}
	}
	e, _ := openWorkers(t, dir, engine.Options{TP: 8, Device: "cuda"}, Config{})
	h := &momentsAtStop{site: "model.layers.0", name: "hidden_states", reps: 21}
	if _, err := e.Prefill(seqs, h, false); err == nil || !strings.Contains(err.Error(), errMeasured.Error()) {
		t.Fatalf("the pass went on past its stop: %v", err)
	}
	if h.err != nil || len(h.seq) != h.reps || len(h.par) != h.reps {
		t.Fatalf("%d+%d timings: %v", len(h.seq), len(h.par), h.err)
	}
	sm, sb := meanBest(h.seq)
	pm, pb := meanBest(h.par)
	t.Logf("statistics of hidden_states [8192, 4096] bf16 at a stop, 8 CUDA worker ranks on one GPU: rank after rank mean %.3f ms (best %.3f), all ranks at once mean %.3f ms (best %.3f), %d stops each",
		sm, sb, pm, pb, h.reps-1)
}
