package fuzz

import (
	"encoding/binary"
	"errors"
	"testing"

	"hsdb/engine/llama2c"
)

// tinyCheckpoint is a llama2.c checkpoint of dim 2, hidden_dim 2, one
// layer, one head, vocab 2 (shared classifier), seq_len 1: the 28-byte
// header, then run.c's arrays in order, all zero (188 bytes).
func tinyCheckpoint() []byte {
	dim, hidden, L, nh, nkv, vocab, seq := 2, 2, 1, 1, 1, 2, 1
	hs := dim / nh
	kv := nkv * hs
	n := vocab*dim + L*dim + L*dim*dim + 2*L*kv*dim + L*dim*dim + L*dim + 3*L*hidden*dim + dim + 2*seq*hs/2
	b := make([]byte, 28+4*n)
	for i, v := range []int{dim, hidden, L, nh, nkv, vocab, seq} {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// FuzzReadLlama2C: llama2.c checkpoints (seed: tinyCheckpoint; stories260K's
// 1 MB file is too large to minimize over: the fuzzer's minimization of a
// new input tries every sub-range of it, quadratic in its size) through
// llama2c.Read: an error wrapping llama2c.ErrFormat, or tensors whose
// sizes agree with the header.
func FuzzReadLlama2C(f *testing.F) {
	f.Add(tinyCheckpoint())
	p := scratch(f, "model.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<10 {
			return
		}
		put(t, p, b)
		ck, err := llama2c.Read(p)
		if err != nil {
			if !errors.Is(err, llama2c.ErrFormat) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		emb := ck.Tensors["model.embed_tokens.weight"]
		if emb == nil || emb.Shape[1] != int(ck.Header.Dim) {
			t.Fatalf("embedding %v for dim %d", emb, ck.Header.Dim)
		}
	})
}

// TestTinyCheckpointReads: the seed itself is a valid checkpoint (so the
// fuzzer starts from one).
func TestTinyCheckpointReads(t *testing.T) {
	p := t.TempDir() + "/m.bin"
	put(t, p, tinyCheckpoint())
	if _, err := llama2c.Read(p); err != nil {
		t.Fatal(err)
	}
}
