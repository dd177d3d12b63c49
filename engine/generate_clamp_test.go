package engine

import (
	"testing"
)

// TestGenerateClampsToMaxPosition: `hsdb generate -n 1000` on a
// model of max_position_embeddings 64 decoded past position 64 (hsdb
// computed positions the model has no length for, growing the KV cache
// without bound for a huge -n). Like run.c (steps > seq_len → seq_len),
// -n is clamped: stories260K's seq_len is 512, so a one-token prompt runs
// positions 0..511 and returns 512 tokens.
func TestGenerateClampsToMaxPosition(t *testing.T) {
	e, err := Open("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Dims.MaxPos != 512 {
		t.Fatalf("max_position_embeddings %d, want stories260K's seq_len 512", e.Dims.MaxPos)
	}
	out, err := e.Generate([]int32{1}, GenerateOptions{Steps: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 512 {
		t.Fatalf("generated %d tokens, want 512 (positions 0..511)", len(out))
	}
	if seqs := e.Sequences(); len(seqs) != 1 || len(seqs[0]) != 512 {
		t.Fatalf("the sequence holds %d tokens, want 512 (the last sampled token is not fed back)", len(seqs[0]))
	}
	// A prompt longer than the clamp is an error, not an empty result.
	long := make([]int32, 600)
	for i := range long {
		long[i] = 1
	}
	if out, err := e.Generate(long, GenerateOptions{Steps: 1000}); err == nil {
		t.Fatalf("a 600-token prompt with 512 positions generated %d tokens and no error", len(out))
	}
}
