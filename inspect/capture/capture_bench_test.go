package capture

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"hsdb/engine"
)

// BenchmarkCaptureJob measures `hsdb capture` on the embedded stories260K:
// the first 32 stories of testdata/stories260K/stories200.jsonl, layers 1,
// 2 and 4, written and validated as a dump. It reports tokens/s and
// sequences/s of the whole job (forward passes, capture, writes, fsyncs,
// re-reads).
func BenchmarkCaptureJob(b *testing.B) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tok, err := e.Tokenizer()
	if err != nil {
		b.Fatal(err)
	}
	in, err := readJSONL("../../testdata/stories260K/stories200.jsonl", tok, LimitsOf(e.Dims))
	if err != nil {
		b.Fatal(err)
	}
	in.Seqs = in.Seqs[:32]
	in.Job.Sequences = 32
	tokens := 0
	for _, s := range in.Seqs {
		tokens += len(s.IDs)
	}
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(dir, fmt.Sprint(i))
		if _, err := RunCaptureJob(context.Background(), targetOf(e), in, JobOptions{Layers: []int{1, 2, 4}, Out: out}); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(tokens*b.N)/s, "tokens/s")
	b.ReportMetric(float64(32*b.N)/s, "seqs/s")
}
