package engine

import (
	"testing"
)

// BenchmarkDecodeStories260K times one decode step (one token, greedy) of
// stories260K at --tp 1 on the CPU, over a 256-position context as
// llama2.c's run.c generates; b.N positions wrap around. Compare with run.c
// by hand (README of the issue note): tok/s = 1e9 / ns/op.
func BenchmarkDecodeStories260K(b *testing.B) {
	e := loadStories(b, 1)
	s := NewSampler(0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for n < b.N {
		logits, err := e.Prefill([][]int32{{1}}, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		n++
		for pos := 1; pos < 256 && n < b.N; pos++ {
			if logits, err = e.Decode([]int32{s.Sample(logits.Row(0))}, nil); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}
