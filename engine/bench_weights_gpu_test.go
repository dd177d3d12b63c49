//go:build cuda

package engine

import (
	"testing"

	"hsdb/engine/backend/cuda"
	"hsdb/engine/backend/cuda/driver"
)

// TestGPUBenchWeights logs the bytes of weights HSDB_BENCH_MODEL keeps on
// the GPU, summed over ranks (what `info memory` reports as weights), for
// scripts/bench/bench-deepseek.sh to compare the fp8 and bf16 variants;
// it fails when no weight bytes are on the GPU (a measurement of nothing).
func TestGPUBenchWeights(t *testing.T) {
	e := benchSetup(t)
	var n int64
	for _, r := range e.ranks {
		n += r.dev.(*cuda.Device).MemoryByClass()[driver.Weights]
	}
	if n <= 0 || len(e.ranks) == 0 {
		t.Fatalf("%d bytes of weights on %d ranks: the model's weights are not on the GPU", n, len(e.ranks))
	}
	t.Logf("BENCH weights_bytes=%d (%.2f GiB over %d ranks)", n, gib(n), len(e.ranks))
}
