package engine

import (
	"fmt"
	"testing"
)

// TestCacheBytesArePlanned: after a prefill of 22 tokens (one sequence)
// every rank's KV cache holds exactly the plan's kv_bytes for --max-tokens
// 22, and after 11 decode steps (33 tokens, past the first capacity) the
// plan's for --max-tokens 33. By hand, on the CPU backend (float32): the
// cache grows to 16 doubled, 32 rows for 22 tokens and 64 for 33.
//
//   - DeepSeek-V3 fixture (4 layers, MLA latent kv_lora_rank 40 +
//     qk_rope_head_dim 8 = 48 values, on every rank): 4·32·48·4 = 24576
//     bytes, then 4·64·48·4 = 49152, at --tp 1 and 2 alike. The expanded
//     per-head keys and values cached before (4 heads of 24+8 and 20:
//     208 values per token at --tp 1, 104 at --tp 2) held 106496 and
//     53248 bytes after the prefill.
//   - Llama fixture (3 layers, 2 kv heads of 12; one per rank at --tp 2):
//     K and V 3·32·2·24·4 = 18432 at --tp 1, 9216 at --tp 2, then twice
//     that.
func TestCacheBytesArePlanned(t *testing.T) {
	for _, c := range []struct {
		name           string
		tp             int
		prefill, after int64
	}{
		{"deepseek_v3", 1, 24576, 49152},
		{"deepseek_v3", 2, 24576, 49152},
		{"llama", 1, 18432, 36864},
		{"llama", 2, 9216, 18432},
	} {
		t.Run(fmt.Sprintf("%s/tp%d", c.name, c.tp), func(t *testing.T) {
			dir := "../testdata/hf/" + c.name
			e, err := Open(dir, Options{TP: c.tp, Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			seq := make([]int32, 22)
			for i := range seq {
				seq[i] = int32(3 + 7*i%90)
			}
			if _, err := e.Prefill([][]int32{seq}, nil, false); err != nil {
				t.Fatal(err)
			}
			check := func(tokens int, want int64) {
				t.Helper()
				p, err := PlanDir(dir, PlanOptions{TP: c.tp, Tokens: tokens, Device: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				got := e.CacheBytes()
				if len(got) != c.tp || len(p.Ranks) != c.tp {
					t.Fatalf("%d ranks hold a cache, %d planned; want %d", len(got), len(p.Ranks), c.tp)
				}
				for r, n := range got {
					if n != want || p.Ranks[r].KV != want {
						t.Errorf("%d tokens, rank %d: the cache holds %d bytes, the plan says %d; want %d", tokens, r, n, p.Ranks[r].KV, want)
					}
				}
			}
			check(22, c.prefill)
			for i := range 11 {
				if _, err := e.Decode([]int32{int32(5 + i)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			check(33, c.after)
		})
	}
}

// TestCacheSizedPerPrefill: a prefill starts its sequences anew, so the
// cache holds what its batch needs (the largest slot + 1 slots of
// model.KVCapacity(the longest sequence) positions, as plan's kvBytes
// says), not the most slots of any earlier batch times the longest
// sequence of any: a capture job packing varied batches grew its cache to
// many times a batch's (DeepSeek-V3 at --tp 8: 64 short sequences once
// and a 4096-token one once held 64·4096 rows, 18 GB a rank, where the
// plan says 274 MiB). By hand, 768 bytes a row on the DeepSeek-V3 fixture
// (4 layers of the latent, 40 + 8 float32 values) and 576 on the Llama
// fixture (3 layers, K and V of 2 kv heads of 12): prefills of 1×40, 8×5
// and 1×3 tokens hold 64, 8·16 = 128 and 16 rows (kept, 128 was 8·64 =
// 512 and 16 stayed 512); 14 decode steps after the last (17 positions)
// hold 32. The single-sequence prefills equal the plan's kv_bytes.
func TestCacheSizedPerPrefill(t *testing.T) {
	for _, c := range []struct {
		name string
		row  int64
	}{{"deepseek_v3", 768}, {"llama", 576}} {
		t.Run(c.name, func(t *testing.T) {
			dir := "../testdata/hf/" + c.name
			e, err := Open(dir, Options{Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			seq := func(n, off int) []int32 {
				s := make([]int32, n)
				for i := range s {
					s[i] = int32(1 + (7*i+off)%90)
				}
				return s
			}
			check := func(what string, rows int64, plan int) {
				t.Helper()
				if got := e.CacheBytes()[0]; got != rows*c.row {
					t.Errorf("%s: the cache holds %d bytes (%d rows a layer), want %d rows: %d", what, got, got/c.row, rows, rows*c.row)
				}
				if plan > 0 {
					p, err := PlanDir(dir, PlanOptions{Tokens: plan, Device: "cpu"})
					if err != nil {
						t.Fatal(err)
					}
					if p.Ranks[0].KV != rows*c.row {
						t.Errorf("%s: the plan for %d tokens says %d bytes, want %d", what, plan, p.Ranks[0].KV, rows*c.row)
					}
				}
			}
			if _, err := e.Prefill([][]int32{seq(40, 0)}, nil, false); err != nil {
				t.Fatal(err)
			}
			check("prefill 1×40", 64, 40)
			var eight [][]int32
			for i := range 8 {
				eight = append(eight, seq(5, i))
			}
			if _, err := e.Prefill(eight, nil, false); err != nil {
				t.Fatal(err)
			}
			check("prefill 8×5", 8*16, 0)
			if _, err := e.Prefill([][]int32{seq(3, 1)}, nil, false); err != nil {
				t.Fatal(err)
			}
			check("prefill 1×3", 16, 3)
			for i := range 14 {
				if _, err := e.Decode([]int32{int32(2 + i)}, nil); err != nil {
					t.Fatal(err)
				}
			}
			check("1×3 and 14 decode steps", 32, 17)
		})
	}
}
