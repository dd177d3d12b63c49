//go:build cuda

package engine

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkGPUDecode times decode steps of HSDB_BENCH_MODEL on CUDA: each
// iteration prefills the benchmark's 4 sequences of 1024 tokens (not
// timed) and then times 16 decode steps of one token per sequence (each
// sequence's greedy next token, its logits to the host included), so the
// context grows from 1024 to 1040 positions. Reports ms per step (wall)
// and tokens/s. On MLA models each step expands every layer's cached
// latent into per-head keys and values (engine/nn/mla_context.go), which
// this measures.
func BenchmarkGPUDecode(b *testing.B) {
	e := benchSetup(b)
	const steps = 16
	ms := make([]float64, 0, b.N*steps)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		l, err := e.Prefill(benchEngine.ids, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for range steps {
			next := make([]int32, benchSeqs)
			for s := range next {
				row := l.Values.F32()[s*e.Dims.Vocab : (s+1)*e.Dims.Vocab]
				next[s] = int32(argmax(row))
			}
			t0 := time.Now()
			if l, err = e.Decode(next, nil); err != nil {
				b.Fatal(err)
			}
			ms = append(ms, float64(time.Since(t0))/1e6)
		}
	}
	b.ReportMetric(float64(benchSeqs*steps*b.N)/b.Elapsed().Seconds(), "tok/s")
	slices.Sort(ms)
	b.Logf("BENCH decode step wall ms: min %.2f median %.2f max %.2f over %d", ms[0], ms[len(ms)/2], ms[len(ms)-1], len(ms))
}

// argmax returns the index of the largest value of v (the first of ties).
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
