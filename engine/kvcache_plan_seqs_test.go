package engine

import (
	"fmt"
	"testing"
)

// TestCacheBytesPlannedForSeveralSequences: a batch of several sequences
// holds a cache slot per sequence, each sized for the longest, and the
// plan with --seqs counts exactly that; a prefill resizes the cache to its
// own batch (model.KVCache.Place), so a session that prefills four short
// sequences and then the long one alone holds one slot, as the plan for
// one sequence says. By hand, on the CPU backend
// (float32), 4 sequence slots of 64 rows (the longest, 33 tokens, past 32):
//
//   - DeepSeek-V3 fixture (4 layers, MLA latent 40 + 8 = 48 values on every
//     rank): 4·(4·64)·48·4 = 196608 bytes at --tp 2;
//   - Llama fixture (3 layers, one kv head of 12 per rank at --tp 2): K and
//     V 3·(4·64)·2·12·4 = 73728 bytes.
//
// The same 42 tokens planned as one sequence (--seqs 1, --max-tokens 42:
// 64 rows) would be a quarter of it. "together" runs the four in one batch
// (the whole); "session" runs four short sequences, then the 33-token one
// alone (the quarter).
func TestCacheBytesPlannedForSeveralSequences(t *testing.T) {
	long := make([]int32, 33)
	for i := range long {
		long[i] = int32(3 + 7*i%90)
	}
	short := func(k int32) []int32 { return []int32{k, k + 1, k + 2} }
	for _, c := range []struct {
		name string
		want int64
	}{
		{"deepseek_v3", 196608},
		{"llama", 73728},
	} {
		for _, how := range []string{"together", "session"} {
			t.Run(fmt.Sprintf("%s/%s", c.name, how), func(t *testing.T) {
				dir := "../testdata/hf/" + c.name
				e, err := Open(dir, Options{TP: 2, Device: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				batches := [][][]int32{{long, short(4), short(9), short(20)}}
				if how == "session" {
					batches = [][][]int32{{short(4), short(9), short(20), short(30)}, {long}}
				}
				for _, b := range batches {
					if _, err := e.Prefill(b, nil, false); err != nil {
						t.Fatal(err)
					}
				}
				p, err := PlanDir(dir, PlanOptions{TP: 2, Tokens: 33, Seqs: 4, Device: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				one, err := PlanDir(dir, PlanOptions{TP: 2, Tokens: 42, Device: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				got := e.CacheBytes()
				if len(got) != 2 || len(p.Ranks) != 2 || len(one.Ranks) != 2 {
					t.Fatalf("%d ranks hold a cache, %d and %d planned; want 2", len(got), len(p.Ranks), len(one.Ranks))
				}
				for r, n := range got {
					if p.Ranks[r].KV != c.want {
						t.Errorf("rank %d: the plan for 4 sequences of up to 33 tokens says %d bytes; want %d", r, p.Ranks[r].KV, c.want)
					}
					if one.Ranks[r].KV != c.want/4 {
						t.Errorf("rank %d: the plan for one sequence of 42 tokens says %d bytes; want %d", r, one.Ranks[r].KV, c.want/4)
					}
					want, plan := c.want, p.Ranks[r].KV
					if how == "session" {
						want, plan = c.want/4, one.Ranks[r].KV
					}
					if n != want || n != plan {
						t.Errorf("rank %d (%s): the cache holds %d bytes, the plan %d; want %d", r, how, n, plan, want)
					}
				}
			})
		}
	}
}

// TestCacheBytesPlannedForEqualSequences: 3 sequences of 17 tokens in one
// prefill hold 3 slots of 32 rows (96), which --max-tokens 51 alone (64
// rows) would undercount; --seqs 3 --seq-len 17 counts them. By hand at
// --tp 2: DeepSeek-V3 fixture 4·96·48·4 = 73728 bytes; Llama fixture
// 3·96·2·12·4 = 27648.
func TestCacheBytesPlannedForEqualSequences(t *testing.T) {
	for _, c := range []struct {
		name string
		want int64
	}{
		{"deepseek_v3", 73728},
		{"llama", 27648},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := "../testdata/hf/" + c.name
			e, err := Open(dir, Options{TP: 2, Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var batch [][]int32
			for s := range 3 {
				seq := make([]int32, 17)
				for i := range seq {
					seq[i] = int32(1 + (s+5*i)%90)
				}
				batch = append(batch, seq)
			}
			if _, err := e.Prefill(batch, nil, false); err != nil {
				t.Fatal(err)
			}
			p, err := PlanDir(dir, PlanOptions{TP: 2, Tokens: 51, Seqs: 3, SeqLen: 17, Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			for r, n := range e.CacheBytes() {
				if n != c.want || r >= len(p.Ranks) || p.Ranks[r].KV != c.want {
					t.Errorf("rank %d: the cache holds %d bytes, the plan %+v; want %d", r, n, p.Ranks, c.want)
				}
			}
		})
	}
}
