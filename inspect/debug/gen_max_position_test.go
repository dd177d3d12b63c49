package debug

import (
	"math"
	"strings"
	"testing"
)

// TestGenPastMaxPosition: `gen N` while stopped skipped the
// max_position_embeddings check and `gen 9223372036854775807` overflowed
// it, so decoding ran on past the model's length, the KV cache growing
// until Ctrl-C or out of memory. stories260K: max_position_embeddings 512
// (llama2.c seq_len), sequence 0 of twoSeqs has 5 tokens, so at most 507
// decode steps fit.
func TestGenPastMaxPosition(t *testing.T) {
	s := newSession(t, 1)
	if s.E.Dims.MaxPos != 512 {
		t.Fatalf("max_position_embeddings %d, want stories260K's 512", s.E.Dims.MaxPos)
	}
	if _, err := s.Break("layers.1", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.1")(s.Run())
	for _, n := range []int{508, 1 << 30, math.MaxInt} {
		if _, err := s.Gen(n); err == nil || !strings.Contains(err.Error(), "max_position_embeddings 512") {
			t.Fatalf("gen %d while stopped in the prefill: %v, want a max_position_embeddings error", n, err)
		}
	}
	s.Kill()
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Run(); err != nil || o.Done == nil {
		t.Fatalf("run: %+v %v", o, err)
	}
	if _, err := s.Gen(math.MaxInt); err == nil || !strings.Contains(err.Error(), "max_position_embeddings 512") {
		t.Fatalf("gen MaxInt after the prefill: %v, want a max_position_embeddings error", err)
	}
	// The engine refuses the decode step itself, whatever its caller
	// checked: 512 tokens fill stories260K's positions.
	ids := make([]int32, 512)
	for i := range ids {
		ids[i] = 1
	}
	if _, err := s.E.Prefill([][]int32{ids}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.E.Decode([]int32{1}, nil); err == nil || !strings.Contains(err.Error(), "513 tokens, more than max_position_embeddings 512") {
		t.Fatalf("decode past 512 positions: %v", err)
	}
}
