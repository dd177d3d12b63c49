package tokenizer

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestEncodeMaxAddedTokensLazy: a text of added tokens alone (1 million
// "<|im_start|>", 12 MB) under a bound of 4096 ids was first cut whole
// into a million segments (117 MB, 468 MB for 48 MB of text) and only
// then counted; the added-token matcher now yields segments as EncodeMax
// takes them (addedMatcher.segments), so it stops at the bound having
// allocated about the bound's ids. The bytes allocated are measured
// (runtime.MemStats.TotalAlloc), not a time; 8 MB is far above the
// 16 KB of ids and far below the segments of the whole text.
func TestEncodeMaxAddedTokensLazy(t *testing.T) {
	tk := loadHFTest(t, "qwen3")
	text := strings.Repeat("<|im_start|>", 1_000_000)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := EncodeAtMost(tk, text, 4096)
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrTooManyTokens) {
		t.Fatalf("EncodeAtMost: %v; want ErrTooManyTokens", err)
	}
	if got := m1.TotalAlloc - m0.TotalAlloc; !(got <= 8<<20) {
		t.Errorf("EncodeAtMost allocated %d bytes for a refusal at 4096 ids; want at most 8 MB", got)
	}
	// The ids up to the bound are the added token's (151644), as before.
	ids, err := EncodeAtMost(tk, strings.Repeat("<|im_start|>", 3)+"hi", 4096)
	if err != nil || len(ids) != 4 || ids[0] != 151644 || ids[2] != 151644 {
		t.Errorf("three <|im_start|> and hi: %v, %v; want 151644 three times, then hi's id", ids, err)
	}
}
