package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// llama2cRecord is one token of a llama2.c tokenizer file: f32 score 0,
// int32 length, the piece.
func llama2cRecord(piece string) []byte {
	b := make([]byte, 8, 8+len(piece))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(piece)))
	return append(b, piece...)
}

// llama2cFile is a tokenizer file of max_token_length 8 holding <unk>,
// <s>, </s>, the 256 byte pieces, then extra more empty tokens.
func llama2cFile(extra int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 8)
	for _, p := range []string{"<unk>", "<s>", "</s>"} {
		b = append(b, llama2cRecord(p)...)
	}
	for i := range 256 {
		b = append(b, llama2cRecord(fmt.Sprintf("<0x%02X>", i))...)
	}
	for range extra {
		b = append(b, llama2cRecord("")...)
	}
	return b
}

// TestLlama2CTokenizerBounded: a llama2.c tokenizer file of 480 MB of
// empty tokens was held whole (3.9 GB, 50 s) before its token 3 was found
// not to be the byte piece <0x00>; the byte pieces are now checked as
// they are read, so a wrong one is refused before the rest is decoded.
// A file of more than MaxTokenID + 1 tokens (here a lowered bound) is
// refused at the first token past it.
func TestLlama2CTokenizerBounded(t *testing.T) {
	bad := binary.LittleEndian.AppendUint32(nil, 8)
	for range 4_000_000 {
		bad = append(bad, llama2cRecord("")...)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := parseLlama2C(bad, "empty.bin")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `token 3 is "", want byte-fallback piece "<0x00>"`) {
		t.Fatalf("4M empty tokens: %v, want token 3 refused", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing at token 3 allocated %d bytes, want under 1 MiB (the 4M tokens were decoded first)", got)
	}

	old := maxLlama2CTokens
	maxLlama2CTokens = 300
	defer func() { maxLlama2CTokens = old }()
	if _, err := parseLlama2C(llama2cFile(300-259), "ok.bin"); err != nil {
		t.Fatalf("300 tokens, bound 300: %v", err)
	}
	_, err = parseLlama2C(llama2cFile(301-259), "big.bin")
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "more than 300 tokens (MaxTokenID + 1; token 300 at byte") {
		t.Fatalf("301 tokens, bound 300: %v, want the bound named", err)
	}
}
