//go:build cuda

package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hsdb/engine/backend/cuda"
	"hsdb/engine/backend/cuda/driver"
	"hsdb/engine/model"
)

// The GPU benchmarks of scripts/bench-gpu.sh. They need a model directory
// in HSDB_BENCH_MODEL (the script writes a Llama-3-8B-shaped checkpoint
// with random bf16 weights) and skip without one. HSDB_BENCH_TP sets the
// world size (default 1), HSDB_BENCH_OUT where the token ids, hsdb's
// logits and (MoE models) its routers' expert ids for each sequence's last
// token go for the HF comparison.

const (
	benchSeqs   = 4
	benchSeqLen = 1024
)

// benchCaptureLayers are the layers whose stream the capture benchmark
// copies out (4 of Llama-3-8B's 32, spread as EAGLE-3 picks low, middle
// and high layers).
var benchCaptureLayers = []int{2, 15, 28, 31}

var benchEngine struct {
	once      sync.Once
	e         *Engine
	ids       [][]int32
	err       error
	firstStop time.Duration // process start to the first stop at model.layers.0
	load      time.Duration
}

// processAge returns how long ago this process started, from
// /proc/self/stat's starttime and /proc/uptime (10 ms resolution).
func processAge() (time.Duration, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/self/stat: %d fields after the command", len(f))
	}
	ticks, err := strconv.ParseFloat(f[19], 64) // field 22: starttime, in clock ticks (USER_HZ = 100)
	if err != nil {
		return 0, err
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err != nil {
		return 0, err
	}
	return time.Duration((secs - ticks/100) * float64(time.Second)), nil
}

// firstStop is a hook that notes when model.layers.0 is first reached.
type firstStop struct {
	at time.Duration
}

func (h *firstStop) Want(ev *model.Event) bool { return h.at == 0 && ev.Site.Path == "model.layers.0" }
func (h *firstStop) Visit(ev *model.Event, ranks []*model.RankView) error {
	age, err := processAge()
	h.at = age
	return err
}

// benchSetup loads HSDB_BENCH_MODEL once per process, runs the first
// prefill with a stop at layer 0 (target: reached within 20 s of process
// start) and writes the token ids for the HF comparison.
func benchSetup(b testing.TB) *Engine {
	dir := os.Getenv("HSDB_BENCH_MODEL")
	if dir == "" {
		b.Skip("HSDB_BENCH_MODEL is not set (scripts/bench-gpu.sh sets it)")
	}
	benchEngine.once.Do(func() {
		tp := 1
		if s := os.Getenv("HSDB_BENCH_TP"); s != "" {
			tp, _ = strconv.Atoi(s)
		}
		t0 := time.Now()
		// HSDB_BENCH_W8A8=1: --w8a8 (fp8 linears on fp8 activations).
		e, err := Open(dir, Options{TP: tp, Device: "cuda", W8A8: os.Getenv("HSDB_BENCH_W8A8") == "1"})
		if err != nil {
			benchEngine.err = err
			return
		}
		benchEngine.load = time.Since(t0)
		rng := rand.New(rand.NewPCG(1, 2))
		ids := make([][]int32, benchSeqs)
		for s := range ids {
			ids[s] = make([]int32, benchSeqLen)
			for i := range ids[s] {
				ids[s][i] = int32(rng.IntN(e.Dims.Vocab))
			}
		}
		stop := &firstStop{}
		if _, err := e.Prefill(ids, stop, false); err != nil {
			benchEngine.err = err
			return
		}
		benchEngine.e, benchEngine.ids, benchEngine.firstStop = e, ids, stop.at
		if out := os.Getenv("HSDB_BENCH_OUT"); out != "" {
			js, _ := json.Marshal(ids)
			if err := os.WriteFile(filepath.Join(out, "ids.json"), js, 0o644); err != nil {
				benchEngine.err = err
			}
		}
	})
	if benchEngine.err != nil {
		b.Fatal(benchEngine.err)
	}
	return benchEngine.e
}

// TestGPUTimeToFirstStop loads HSDB_BENCH_MODEL, runs a prefill to the
// first stop at model.layers.0 and reports the time from process start to
// that stop (target <= 20 s; scripts/bench-gpu.sh judges it, since a failed
// test would keep the benchmarks of the same run from running). It fails
// when the load or the prefill fails, or the stop is never reached. Run it
// as the first thing of a fresh process.
func TestGPUTimeToFirstStop(t *testing.T) {
	benchSetup(t)
	if benchEngine.firstStop <= 0 {
		t.Fatal("the prefill never stopped at model.layers.0")
	}
	t.Logf("BENCH first_stop_s=%.2f load_s=%.2f", benchEngine.firstStop.Seconds(), benchEngine.load.Seconds())
}

// capture is a hook copying the stream of chosen layers on every rank
// into pinned host buffers asynchronously, as a capture for a dump does;
// Wait collects the copies.
type capture struct {
	layers map[int]int // layer -> buffer index
	bufs   [][]*driver.HostBuffer
	events []*driver.Event
	err    error
}

func (c *capture) Want(ev *model.Event) bool {
	_, ok := c.layers[ev.Site.Layer]
	return ok && ev.Site.Depth == 2
}

func (c *capture) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, v := range ranks {
		for _, st := range v.Tensors {
			if st.Name != "stream" {
				continue
			}
			d := v.Device.(*cuda.Device)
			ev, err := d.CopyRowsToHost(st.T, 0, st.T.Shape()[0], c.bufs[v.Rank][c.layers[ev.Site.Layer]], 0)
			if err != nil {
				return err
			}
			c.events = append(c.events, ev)
		}
	}
	return nil
}

func (c *capture) wait() error {
	for _, ev := range c.events {
		if err := ev.Wait(); err != nil {
			return err
		}
	}
	c.events = c.events[:0]
	return nil
}

func benchPrefill(b *testing.B, withCapture bool) {
	e := benchSetup(b)
	var hook model.Hook
	var c *capture
	if withCapture {
		c = &capture{layers: map[int]int{}}
		for i, l := range benchCaptureLayers {
			c.layers[l] = i
		}
		bytes := int64(benchSeqs * benchSeqLen * e.Dims.Hidden * e.ranks[0].dev.ActDType().Size())
		for r := range e.World {
			var bufs []*driver.HostBuffer
			for range benchCaptureLayers {
				h, err := e.ranks[r].dev.(*cuda.Device).AllocHost(bytes)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Free() })
				bufs = append(bufs, h)
			}
			c.bufs = append(c.bufs, bufs)
		}
		hook = c
	}
	run := func() *Logits {
		l, err := e.Prefill(benchEngine.ids, hook, false)
		if err != nil {
			b.Fatal(err)
		}
		if c != nil {
			if err := c.wait(); err != nil {
				b.Fatal(err)
			}
		}
		return l
	}
	logits := run() // warm-up: module loads, cuBLAS heuristics, pool
	// then HSDB_BENCH_WARM_S seconds (default 1) of prefills, so that an
	// H200 at its power limit has settled its clock on this work (the
	// CUDA backend's benchWarm says why); hf_prefill.py --warm-s alike.
	warm := 1.0
	if v := os.Getenv("HSDB_BENCH_WARM_S"); v != "" {
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || w < 0 {
			b.Fatalf("HSDB_BENCH_WARM_S: %q is not a number of seconds >= 0", v)
		}
		warm = w
	}
	for t0 := time.Now(); time.Since(t0).Seconds() < warm; {
		run()
	}
	if out := os.Getenv("HSDB_BENCH_OUT"); out != "" && !withCapture {
		buf := make([]byte, 0, 4*logits.Values.Numel())
		for _, v := range logits.Values.F32() {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		if err := os.WriteFile(filepath.Join(out, "hsdb_logits.f32"), buf, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := writeLastRoutes(e, filepath.Join(out, "hsdb_topk.json")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	ms := make([]float64, 0, b.N)
	for range b.N {
		t0 := time.Now()
		run()
		ms = append(ms, float64(time.Since(t0))/1e6)
	}
	b.ReportMetric(float64(benchSeqs*benchSeqLen*b.N)/b.Elapsed().Seconds(), "tok/s")
	slices.Sort(ms)
	b.Logf("BENCH prefill wall ms: min %.2f median %.2f max %.2f over %d", ms[0], ms[len(ms)/2], ms[len(ms)-1], len(ms))
}

// lastRoutes is a hook keeping, at every router (a site
// model.layers.N.mlp.gate), the expert ids its topk_ids [tokens, top_k]
// (I64, rank 0's: the gate is replicated) gives each sequence's last
// token (rows seqLen-1, 2·seqLen-1, ... of the [4·1024]-token batch).
type lastRoutes struct {
	ids map[string][][]int64 // site path -> [sequence][top_k]
}

func (h *lastRoutes) Want(ev *model.Event) bool { return strings.HasSuffix(ev.Site.Path, ".mlp.gate") }
func (h *lastRoutes) Visit(ev *model.Event, ranks []*model.RankView) error {
	st, ok := ranks[0].Tensor("topk_ids")
	if !ok || st.Host == nil {
		return fmt.Errorf("%s: no topk_ids on the host", ev.Site.Path)
	}
	sh := st.Host.Shape
	if len(sh) != 2 || sh[0] != benchSeqs*benchSeqLen {
		return fmt.Errorf("%s: topk_ids is %v, want [%d, top_k]", ev.Site.Path, sh, benchSeqs*benchSeqLen)
	}
	var seqs [][]int64
	for s := range benchSeqs {
		row := (s+1)*benchSeqLen - 1
		ids := make([]int64, sh[1])
		for j := range ids {
			ids[j] = st.Host.Int(row*sh[1] + j)
		}
		seqs = append(seqs, ids)
	}
	h.ids[ev.Site.Path] = seqs
	return nil
}

// writeLastRoutes runs one more prefill of the benchmark's ids with a
// lastRoutes hook and writes what it kept to path as JSON ({"model.layers.
// 1.mlp.gate": [[8 ids] per sequence]}); a model without routers writes
// nothing. hf_prefill.py --hsdb-topk compares HF's routing of those tokens
// with it, and reruns HF with its routing of them set to these ids: the
// cosine of the last-token logits apart from a routing decision that the
// two roundings take differently.
func writeLastRoutes(e *Engine, path string) error {
	h := &lastRoutes{ids: map[string][][]int64{}}
	if _, err := e.Prefill(benchEngine.ids, h, false); err != nil {
		return err
	}
	if len(h.ids) == 0 {
		return nil
	}
	js, err := json.Marshal(h.ids)
	if err != nil {
		return err
	}
	return os.WriteFile(path, js, 0o644)
}

// BenchmarkGPUPrefill times the prefill of 4 sequences of 1024 tokens of
// HSDB_BENCH_MODEL on CUDA (logits of each sequence's last token to the
// host included); reports tokens/s.
func BenchmarkGPUPrefill(b *testing.B) { benchPrefill(b, false) }

// BenchmarkGPUPrefillCapture is BenchmarkGPUPrefill with captures of the
// stream of 4 layers on every rank, copied asynchronously to pinned host
// memory (stream = hidden_states + residual is computed for them; the
// copies are waited for inside the timing). Target: at most 3 % slower.
func BenchmarkGPUPrefillCapture(b *testing.B) { benchPrefill(b, true) }

// TestGPUPrefillProfile prints where the device time of one prefill of
// HSDB_BENCH_MODEL goes, per op kind and op by op in queue order, with the
// stream's idle time before each op, when HSDB_CUDA_PROFILE=1 (skips
// otherwise: profiling adds two events per op).
func TestGPUPrefillProfile(t *testing.T) {
	if !driver.ProfileEnabled() {
		t.Skip("HSDB_CUDA_PROFILE=1 is not set")
	}
	e := benchSetup(t)
	if _, err := e.Prefill(benchEngine.ids, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := driver.ProfileReport(); err != nil { // forget the warm-up
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := e.Prefill(benchEngine.ids, nil, false); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	trace, err := driver.ProfileTrace()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one prefill of %d×%d tokens, %.1f ms wall (profiled):\n%s", benchSeqs, benchSeqLen, float64(wall)/1e6, driver.FormatProfile(driver.ProfileRows(trace)))
	t.Logf("the same prefill op by op (gap: the stream idle before the op):\n%s", driver.FormatTrace(trace))
}

// TestGPUMemoryPerRank checks issue 6's memory bound on the benchmark model
// (HSDB_BENCH_MODEL, one rank): during a prefill of 4 × 1024 tokens the
// GPU's peak holds no more than the weights, the KV cache and one decoder
// layer's activations, plus 10 %. One layer's activations are counted from
// the dims, for T tokens in the activation dtype (2 bytes in bf16): the
// layer's input pair and the normed pair (4·T·H), q, k, v and their rotated
// copies (2·T·(Hq + 2·Hkv)), the attention output and o_proj's (2·T·H),
// the attention scratch of one chunk of 1024 queries (heads·1024·1024·(4 +
// 2): f32 scores and bf16 probabilities), gate, up and their product (3·T·I)
// and down_proj's output (T·H).
func TestGPUMemoryPerRank(t *testing.T) {
	e := benchSetup(t)
	g := e.ranks[0].dev.(*cuda.Device).GPU()
	if err := g.ResetPeak(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prefill(benchEngine.ids, nil, false); err != nil {
		t.Fatal(err)
	}
	st, err := g.MemoryStats()
	if err != nil {
		t.Fatal(err)
	}
	d := e.Dims
	T, H, I := int64(benchSeqs*benchSeqLen), int64(d.Hidden), int64(d.Intermediate)
	hq, hkv := int64(d.Heads*d.HeadDim), int64(d.KVHeads*d.HeadDim)
	es := int64(e.ranks[0].dev.ActDType().Size())
	layer := es*(4*T*H+2*T*(hq+2*hkv)+2*T*H+3*T*I+T*H) + int64(d.Heads)*1024*1024*(4+es)
	weights, kv, act := st.Peak[driver.Weights], st.Peak[driver.KVCache], st.Peak[driver.Activations]
	bound := (weights + kv + layer) * 11 / 10
	t.Logf("BENCH memory weights=%.2fGiB kv=%.2fGiB activations_peak=%.2fGiB one_layer=%.2fGiB peak_total=%.2fGiB bound=%.2fGiB",
		gib(weights), gib(kv), gib(act), gib(layer), gib(weights+kv+act), gib(bound))
	if weights+kv+act > bound {
		t.Errorf("peak %.2f GiB exceeds weights + KV cache + one layer's activations + 10%% = %.2f GiB", gib(weights+kv+act), gib(bound))
	}
}

func gib(n int64) float64 { return float64(n) / (1 << 30) }
