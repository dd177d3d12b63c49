package worker

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/safetensors"
)

// testWorkerEnv makes the test binary a worker: the front's tests start
// workers by running this binary again (Config.Command), so they need no
// build of cmd/hsdb.
const testWorkerEnv = "HSDB_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(testFrontEnv) != "" {
		runTestFront(os.Getenv(testFrontEnv))
	}
	if os.Getenv(testWorkerEnv) == "1" {
		if os.Getenv(fakeLostEnv) == "1" {
			fakeContextLoss()
		}
		peerFaultFromEnv()
		fs := flag.NewFlagSet("worker", flag.ExitOnError)
		connect := fs.String("connect", "", "")
		rank := fs.Int("rank", -1, "")
		fs.Parse(os.Args[1:])
		if err := Serve(WorkerConfig{Connect: *connect, Token: os.Getenv(TokenEnv), Rank: *rank}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openWorkers loads the model at path with opts.TP ranks in spawned
// worker processes and closes it when the test ends.
func openWorkers(t testing.TB, path string, opts engine.Options, cfg Config) (*engine.Engine, *Front) {
	t.Helper()
	t.Setenv(testWorkerEnv, "1")
	cfg.Spawn = true
	cfg.Command = []string{os.Args[0]}
	f, err := Start(path, opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Workers = f
	e, err := engine.Open(path, opts)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, f
}

// TestHFParityThroughWorkers: with every rank in its own worker process
// (collectives through the front's hub), each decoder layer's stream on
// every rank and the logits equal HF transformers' float32 values within
// 1e-5 of each tensor's max |value| — dense Llama, Qwen3 (q/k norm) and
// DeepSeek-V3 (MLA, routed experts: host-side router tensors cross too).
func TestHFParityThroughWorkers(t *testing.T) {
	for _, c := range []struct {
		name string
		tp   int
	}{{"llama", 2}, {"qwen3", 2}, {"deepseek_v3", 2}, {"llama", 4}} {
		t.Run(fmt.Sprintf("%s/tp%d", c.name, c.tp), func(t *testing.T) {
			checkWorkersParity(t, c.name, engine.Options{TP: c.tp}, Config{}, 1e-5)
		})
	}
}

// checkWorkersParity opens HF fixture name with its ranks in worker
// processes (opts, cfg) and checks every decoder layer's stream on every
// rank and the logits against HF transformers' float32 values within tol
// of each tensor's max |value|.
func checkWorkersParity(t *testing.T, name string, opts engine.Options, cfg Config, tol float64) {
	t.Helper()
	dir := "../../testdata/hf/" + name
	ref, err := safetensors.Open(dir + "/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	e, _ := openWorkers(t, dir, opts, cfg)
	rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
	logits, err := e.Prefill(enginetest.HFSeqs(t, ref), rec, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range e.Dims.Layers {
		want, err := ref.Tensor(fmt.Sprintf("layer.%d", i))
		if err != nil {
			t.Fatal(err)
		}
		got := rec.Got[fmt.Sprintf("model.layers.%d/stream", i)]
		if len(got) != opts.TP {
			t.Fatalf("layer %d seen on %d ranks, want %d", i, len(got), opts.TP)
		}
		for r, g := range got {
			if err := enginetest.CheckClose(g.F32(), want.ToF32(), tol); err != nil {
				t.Errorf("rank %d layer %d: %v", r, i, err)
			}
		}
	}
	want, err := ref.Tensor("logits")
	if err != nil {
		t.Fatal(err)
	}
	if err := enginetest.CheckClose(logits.Values.F32(), want.ToF32(), tol); err != nil {
		t.Errorf("logits: %v", err)
	}
}

// TestWrongTokenRefused: a worker presenting another token is refused
// with the reason, and the front still takes the worker with the right
// one; --listen binds to loopback by default.
func TestWrongTokenRefused(t *testing.T) {
	var log strings.Builder
	cfg := Config{Token: "right-token", Timeout: 20 * time.Second, Log: &syncWriter{b: &log}}
	addr, started := startListening(t, engine.DefaultModelPath, engine.Options{TP: 1}, cfg)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("the front listens on %s, want loopback", addr)
	}
	err := Serve(WorkerConfig{Connect: addr, Token: "wrong-token", Rank: -1, Dial: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "wrong token") {
		t.Fatalf("a wrong token: %v, want a refusal naming the wrong token", err)
	}
	served := make(chan error, 1)
	go func() {
		served <- Serve(WorkerConfig{Connect: addr, Token: "right-token", Rank: -1, Dial: 5 * time.Second})
	}()
	r := <-started
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := r.f.Ranks(); len(got) != 1 {
		t.Fatalf("%d ranks joined, want 1", len(got))
	}
	r.f.Close()
	if err := <-served; err != nil {
		t.Errorf("the worker with the right token: %v", err)
	}
	if !strings.Contains(log.String(), "wrong token") {
		t.Errorf("the front's log does not note the refusal:\n%s", log.String())
	}
}

// TestWorkerLoadError: a worker that cannot load its rank (a model path
// its host cannot read) fails Start with an error naming the rank and the
// path, and no worker is left running.
func TestWorkerLoadError(t *testing.T) {
	t.Setenv(testWorkerEnv, "1")
	_, err := Start("/nonexistent/model", engine.Options{TP: 2}, Config{Spawn: true, Command: []string{os.Args[0]}, Timeout: 20 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/model") || !strings.Contains(err.Error(), "rank") {
		t.Fatalf("Start: %v, want an error naming a rank and the path", err)
	}
}

var _ model.Hook = (*enginetest.Recorder)(nil)

// syncWriter is a strings.Builder safe for the front's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// joinWorkers starts a front that waits for pp × tp workers and joins
// them as `hsdb worker --connect ADDR --token T` does (Serve, over
// loopback), each asking for no rank in particular.
func joinWorkers(t *testing.T, path string, opts engine.Options, pp int) (*engine.Engine, *Front) {
	return joinWorkersProcs(t, path, opts, pp, 0)
}

// joinWorkersProcs is joinWorkers with the first procs workers in
// processes of their own (this test binary as a worker, `--connect ADDR`,
// the token in TokenEnv), as a launcher on another host starts them; the
// others run Serve in this process.
func joinWorkersProcs(t *testing.T, path string, opts engine.Options, pp, procs int) (*engine.Engine, *Front) {
	t.Helper()
	cfg := Config{Token: "pp-token", PP: pp, Timeout: time.Minute}
	addr, started := startListening(t, path, opts, cfg)
	served := make(chan error, pp*opts.TP)
	for i := range pp * opts.TP {
		if i < procs {
			cmd := exec.Command(os.Args[0], "--connect", addr)
			cmd.Env = append(os.Environ(), testWorkerEnv+"=1", TokenEnv+"=pp-token")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				err := cmd.Wait()
				if err != nil {
					err = fmt.Errorf("worker process: %w: %s", err, stderr.String())
				}
				served <- err
			}()
			continue
		}
		go func() {
			served <- Serve(WorkerConfig{Connect: addr, Token: "pp-token", Rank: -1, Dial: 5 * time.Second})
		}()
	}
	r := <-started
	if r.err != nil {
		t.Fatal(r.err)
	}
	opts.Workers = r.f
	e, err := engine.Open(path, opts)
	if err != nil {
		r.f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		for range pp * opts.TP {
			if err := <-served; err != nil {
				t.Errorf("a worker: %v", err)
			}
		}
	})
	return e, r.f
}

// TestPipelineStagesMatchTP1: with --pp 2 --tp 2 (four workers joined
// over loopback, two of them processes of their own as `hsdb worker
// --connect` runs them; layers split as vLLM's get_pp_indices), stopping
// at every layer's output (in both stages) and copying its values, every decoder
// layer's stream on every rank equals both HF transformers' values and an
// in-process --tp 1 run within 1e-5, and so do the logits; the second
// stage's layers come from the second stage's workers; every collective
// and stage transfer went over the workers' direct links (none through
// the front).
func TestPipelineStagesMatchTP1(t *testing.T) {
	for _, name := range []string{"llama", "qwen3", "deepseek_v3"} {
		t.Run(name, func(t *testing.T) {
			dir := "../../testdata/hf/" + name
			ref, err := safetensors.Open(dir + "/reference.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			seqs := enginetest.HFSeqs(t, ref)
			one, err := engine.Open(dir, engine.Options{TP: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer one.Close()
			rec1 := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
			logits1, err := one.Prefill(seqs, rec1, true)
			if err != nil {
				t.Fatal(err)
			}
			e, f := joinWorkersProcs(t, dir, engine.Options{TP: 2}, 2, 2)
			rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
			logits, err := e.Prefill(seqs, rec, true)
			if err != nil {
				t.Fatal(err)
			}
			stages, _ := StageLayers(e.Dims.Layers, 2)
			if len(f.stages) != 2 || f.stages[1] != stages[1] || stages[1].First < 1 {
				t.Fatalf("stages %v, want %v", f.stages, stages)
			}
			for i := range e.Dims.Layers {
				k := fmt.Sprintf("model.layers.%d/stream", i)
				want, err := ref.Tensor(fmt.Sprintf("layer.%d", i))
				if err != nil {
					t.Fatal(err)
				}
				got := rec.Got[k]
				if len(got) != 2 {
					t.Fatalf("layer %d seen on %d ranks, want 2", i, len(got))
				}
				for r, g := range got {
					if err := enginetest.CheckClose(g.F32(), want.ToF32(), 1e-5); err != nil {
						t.Errorf("rank %d layer %d vs HF: %v", r, i, err)
					}
					if err := enginetest.CheckClose(g.F32(), rec1.Got[k][0].F32(), 1e-5); err != nil {
						t.Errorf("rank %d layer %d vs --tp 1: %v", r, i, err)
					}
				}
			}
			if err := enginetest.CheckClose(logits.Values.F32(), logits1.Values.F32(), 1e-5); err != nil {
				t.Errorf("logits vs --tp 1: %v", err)
			}
			if n := f.hubbed.Load(); n != 0 {
				t.Errorf("%d tensors went through the front; with direct links, want none", n)
			}
		})
	}
}

// TestStageLayers: vLLM's get_pp_indices split (vllm/distributed/utils.py),
// worked by hand: 5 layers in 2 stages are 3+2, in 3 stages 2+2+1; 61 in
// 4 are 15+15+16+15 (the remainder goes to the second-last); fewer layers than stages is an error.
func TestStageLayers(t *testing.T) {
	for _, c := range []struct {
		n, pp int
		want  string
	}{{5, 2, "[0-2 3-4]"}, {5, 3, "[0-1 2-3 4-4]"}, {61, 4, "[0-14 15-29 30-45 46-60]"}, {4, 1, "[0-3]"}} {
		got, err := StageLayers(c.n, c.pp)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("StageLayers(%d, %d) = %v %v, want %s", c.n, c.pp, got, err, c.want)
		}
	}
	if _, err := StageLayers(2, 3); err == nil {
		t.Error("2 layers in 3 stages: no error")
	}
}

// TestInjectedFaultsReachWorkers: a fault injected into the engine (`inject`)
// acts on ranks that run in worker processes exactly as on in-process
// ranks: with the down_proj all-reduce of layer 1 skipped on every rank,
// each rank's stream of layers 1 and 2 through workers equals the
// in-process rank's, and the ranks' copies differ from each other (the
// fault shows).
func TestInjectedFaultsReachWorkers(t *testing.T) {
	faults := model.Faults{{Kind: model.FaultSkipAllReduce, Site: "model.layers.1.mlp.down_proj", Rank: -1}}
	opts := engine.Options{TP: 2}
	seqs := [][]int32{{1, 403, 407, 261}, {1, 400, 281}}
	record := func(e *engine.Engine) *enginetest.Recorder {
		e.Faults = faults
		rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
		if _, err := e.Prefill(seqs, rec, true); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	local, err := engine.Open("", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	want := record(local)
	remote, _ := openWorkers(t, "", opts, Config{})
	got := record(remote)
	for _, k := range []string{"model.layers.1/stream", "model.layers.2/stream"} {
		for r := range 2 {
			enginetest.AssertClose(t, fmt.Sprintf("rank %d %s through workers", r, k), got.Rank(k, r).F32(), want.Rank(k, r).F32(), 0)
		}
		if enginetest.CheckClose(got.Rank(k, 1).F32(), got.Rank(k, 0).F32(), 0) == nil {
			t.Errorf("%s: ranks agree under skip-allreduce: the fault did not act in the workers", k)
		}
	}
}
