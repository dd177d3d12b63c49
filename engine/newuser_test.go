package engine

import (
	"testing"
)

// TestNewUser_GenerateClampsToMaxPosition: `hsdb generate -n 1000` on a
// model of max_position_embeddings 64 decoded past position 64 (hsdb
// computed positions the model has no length for, growing the KV cache
// without bound for a huge -n). Like run.c (steps > seq_len → seq_len),
// -n is clamped: stories260K's seq_len is 512, so a one-token prompt runs
// positions 0..511 and returns 512 tokens.
func TestNewUser_GenerateClampsToMaxPosition(t *testing.T) {
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

// TestNewUser_NoTokenizerMessage: `input text` on a model without a
// tokenizer said "no tokenizer for DIR: looked for ... in DIR (use token
// ids instead); give ids instead (input ids 1,2,3)": the directory twice
// and two hints. The engine now names the directory once and what it
// looked for; each caller adds its own hint (--ids, input ids).
func TestNewUser_NoTokenizerMessage(t *testing.T) {
	const dir = "../testdata/hf/llama"
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Tokenizer()
	want := "no tokenizer in " + dir + " (looked for tokenizer.json, tiktoken.model, tokenizer.model, tokenizer.bin)"
	if err == nil || err.Error() != want {
		t.Fatalf("Tokenizer() = %v, want %q", err, want)
	}
}
