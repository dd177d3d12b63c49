package worker

import (
	"testing"

	"hsdb/engine"
)

// TestCacheBytesThroughWorkers: with DeepSeek-V3's ranks in worker
// processes, each rank's KV-cache bytes as the front reports them (`info
// memory`) are the MLA latent cache the worker holds. By hand, after a
// prefill of 22 tokens (float32, 4 layers): a capacity of 32 rows (16
// doubled) of kv_lora_rank 40 + qk_rope_head_dim 8 values, 4·32·48·4 =
// 24576 bytes on every rank (the per-head keys and values cached before
// held 4·32·(2·32 + 2·20)·4 = 53248 at --tp 2).
func TestCacheBytesThroughWorkers(t *testing.T) {
	e, _ := openWorkers(t, "../../testdata/hf/deepseek_v3", engine.Options{TP: 2}, Config{})
	seq := make([]int32, 22)
	for i := range seq {
		seq[i] = int32(3 + 7*i%90)
	}
	if _, err := e.Prefill([][]int32{seq}, nil, false); err != nil {
		t.Fatal(err)
	}
	got := e.CacheBytes()
	if len(got) != 2 {
		t.Fatalf("%d ranks report a cache, want 2", len(got))
	}
	for r, n := range got {
		if n != 24576 {
			t.Errorf("rank %d: the worker's cache holds %d bytes, want 24576", r, n)
		}
	}
}
