package engine_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"hsdb/engine"
)

// TestPlanLlama2CStories: `hsdb plan` on stories260K.bin (header dim 64,
// hidden_dim 172, 5 layers, 8 heads, 4 kv heads, vocab 512 shared,
// seq_len 512: head size 8, kv_dim 32) counts each rank's float32 weights
// as run.c's layout gives them, split as vLLM splits a Llama. By hand:
//
//	tp 1: embedding 512·64, 5 × (two norms 2·64, wq 64·64, wk 32·64,
//	      wv 32·64, wo 64·64, w1 w2 w3 3·172·64), final norm 64; the
//	      classifier is the embedding: 260032 floats (the file's 1056540
//	      bytes less the 28-byte header and freq_cis 2·512·4 floats)
//	tp 2: embedding 256 rows, q 32 rows, k and v 2 kv heads = 16 rows,
//	      o 32 columns, gate and up 86 rows, down 86 columns; norms whole
func TestPlanLlama2CStories(t *testing.T) {
	for _, c := range []struct {
		tp   int
		want int64
	}{
		{1, 4 * (512*64 + 5*(2*64+64*64+32*64+32*64+64*64+3*172*64) + 64)},
		{2, 4 * (256*64 + 5*(2*64+32*64+16*64+16*64+64*32+3*86*64) + 64)},
	} {
		p, err := engine.PlanModel("../testdata/stories260K/stories260K.bin", engine.PlanOptions{TP: c.tp})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Llama2C || !p.Checkpoint || p.Dense != "f32" || len(p.Ranks) != c.tp {
			t.Fatalf("tp %d: llama2c %v checkpoint %v dense %s, %d ranks; want a llama2.c checkpoint's float32 at %d ranks", c.tp, p.Llama2C, p.Checkpoint, p.Dense, len(p.Ranks), c.tp)
		}
		for _, r := range p.Ranks {
			if r.Weights != c.want {
				t.Errorf("tp %d rank %d: %d weight bytes, want %d", c.tp, r.Rank, r.Weights, c.want)
			}
		}
	}
}

// TestPlanLlama2CReadsHeaderOnly: a plan of a llama2.c .bin is made from
// its 28-byte header: the names, shapes and float32 dtype of every tensor
// follow from it. PlanModel read and converted the whole checkpoint
// (llama2c.Read) to learn them: here a 68 MiB file (its arrays a sparse
// hole), at least 136 MiB allocated (142 MiB measured); now under 1 MiB
// (163 KiB). The header is dim 512, hidden_dim 1024, 4 layers, 8 heads,
// 4 kv heads (head size 64, kv_dim 256), vocab -8192 (the classifier stored apart: wcls after
// freq_cis), seq_len 64. By hand, per rank at tp 2: embedding and
// classifier 4096 rows of 512 each; 4 × (two norms 2·512, wq 256 rows,
// wk and wv 2 kv heads = 128 rows, wo 256 columns of 512, w1 and w3 512
// rows, w2 512 columns of 512); the final norm 512.
func TestPlanLlama2CReadsHeaderOnly(t *testing.T) {
	const floats = 8192*512 + 4*(2*512+512*512+2*256*512+512*512+3*1024*512) + 512 + 64*32*2 + 8192*512 // run.c's arrays in file order, freq_cis 64·32 twice
	var h [28]byte
	for i, v := range []int32{512, 1024, 4, 8, 4, -8192, 64} {
		binary.LittleEndian.PutUint32(h[4*i:], uint32(v))
	}
	path := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(path, h[:], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 28+4*floats); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := engine.PlanModel(path, engine.PlanOptions{TP: 2})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("PlanModel allocated %d KiB for a %d MiB .bin", got>>10, (28+4*floats)>>20)
	if got > 1<<20 {
		t.Errorf("PlanModel of a %d MiB .bin allocated %d KiB; want its header read alone (under 1 MiB)", (28+4*floats)>>20, got>>10)
	}
	const want = 4 * (2*4096*512 + 4*(2*512+256*512+2*128*512+512*256+2*512*512+512*512) + 512)
	for _, r := range p.Ranks {
		if r.Weights != want {
			t.Errorf("rank %d: %d weight bytes, want %d", r.Rank, r.Weights, want)
		}
	}
	if len(p.Ranks) != 2 || !p.Llama2C {
		t.Errorf("%d ranks, llama2c %v; want 2 ranks of a llama2.c plan", len(p.Ranks), p.Llama2C)
	}
}
