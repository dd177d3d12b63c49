package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/plan"
)

// TestPlanKVOverflowSaysWhy: a KV cache whose byte count overflows int64
// is refused naming what it multiplies: the sequences (--seqs), the rows
// each holds (--seq-len) and the layers. It said only "rank 0: KV cache:
// byte count overflows int64", leaving the reader to guess which flag or
// config field. By hand, testdata/hf/qwen3's config (3 layers) with 4096
// kv heads of head_dim 4096 and max_position_embeddings 2^28: 2^20
// sequences × 2^28 rows × 2 (K and V) × 2^24 values × 4 bytes = 2^75
// bytes per layer.
func TestPlanKVOverflowSaysWhy(t *testing.T) {
	dir := hostileCopy(t, "qwen3")
	hostileJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
		m["max_position_embeddings"] = 1 << 28
		m["num_key_value_heads"] = 4096
		m["num_attention_heads"] = 4096
		m["head_dim"] = 4096
	})
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	_, err := PlanDir(dir, PlanOptions{TP: 1, Tokens: 1, Seqs: 1 << 20, SeqLen: 1 << 28})
	want := "KV cache of 1048576 sequences (--seqs) × 268435456 rows (--seq-len 268435456) × 3 layers: byte count overflows int64"
	if !errors.Is(err, plan.ErrOverflow) || !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nwant plan.ErrOverflow containing %q", err, want)
	}
}
