package capture

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hsdb/engine/tensor"
)

// BenchmarkSpeculatorsFile writes, fsyncs, re-reads and validates one
// Llama-3-8B-shaped speculators sample per iteration (1024 tokens, 4 ids,
// hidden 4096, bf16: 33.5 MB), and as its peer in the same run writes the
// same number of bytes with os.WriteFile and an fsync. It reports MB/s of
// each and hsdb's as a fraction of the raw write ("of_raw"): what the
// per-file guarantees cost a single writer.
func BenchmarkSpeculatorsFile(b *testing.B) {
	const n, h, k = 1024, 4096, 4
	r := rand.New(rand.NewPCG(1, 2))
	s := &SeqCapture{Seq: 0, IDs: make([]int32, n), Tensors: map[string]*tensor.Tensor{}}
	for i := range s.IDs {
		s.IDs[i] = int32(r.IntN(128256))
	}
	plan, err := PlanLayers(FormatSpeculators, "2,16,29,32", 32, parseInts)
	if err != nil {
		b.Fatal(err)
	}
	for _, src := range plan.Srcs {
		v := make([]float32, n*h)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		s.Tensors[src.Key()] = tensor.FromF32(v, n, h).Convert(tensor.BF16)
	}
	info := DumpInfo{Model: ModelInfo{Dims: map[string]int{"hidden_size": h, "num_hidden_layers": 32}}, Layers: plan.HsdbLayers(), What: WhatStream, Plan: plan}
	w, err := CreateDump(filepath.Join(b.TempDir(), "hs"), info, DumpOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Abort()
	size := int64(n * (k*h*2 + 8))
	raw := make([]byte, size)
	var rawSecs float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Seq = i
		if _, err := w.writeSeq(s, "x"); err != nil {
			b.Fatal(err)
		}
	}
	secs := b.Elapsed().Seconds()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		p := filepath.Join(w.Stage(), "raw.bin")
		t0 := testingNow()
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		f.Write(raw)
		f.Sync()
		f.Close()
		rawSecs += testingSince(t0)
		os.Remove(p)
	}
	mb := float64(size*int64(b.N)) / 1e6
	b.ReportMetric(mb/secs, "MB/s")
	b.ReportMetric(mb/rawSecs, "raw_MB/s")
	b.ReportMetric(rawSecs/secs, "of_raw")
}

func testingNow() time.Time            { return time.Now() }
func testingSince(t time.Time) float64 { return time.Since(t).Seconds() }
