package tokenizer

import (
	"strings"
	"testing"
)

// benchText is strings.txt joined with newlines and repeated to about
// 256 KiB: TinyStories English with punctuation, digits, whitespace runs,
// code and non-ASCII text.
func benchText(b *testing.B) string {
	b.Helper()
	one := strings.Join(testStrings(b), "\n")
	return strings.Repeat(one+"\n", 256<<10/len(one)+1)
}

// BenchmarkEncode reports encode throughput (MB/s of UTF-8 input) for each
// tokenizer on the same text.
func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	toks := []struct {
		name string
		load func(testing.TB) Tokenizer
	}{
		{"llama2c-tok512", func(tb testing.TB) Tokenizer { return loadLlama2CTest(tb) }},
		{"sentencepiece-tok512", func(tb testing.TB) Tokenizer { return loadSentencePieceTest(tb) }},
		{"hf-qwen3", func(tb testing.TB) Tokenizer { return loadHFTest(tb, "qwen3") }},
		{"hf-deepseek_v3", func(tb testing.TB) Tokenizer { return loadHFTest(tb, "deepseek_v3") }},
	}
	for _, tc := range toks {
		b.Run(tc.name, func(b *testing.B) {
			tk := tc.load(b)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ids, err := tk.Encode(text)
				if err != nil || len(ids) == 0 {
					b.Fatalf("Encode: %d ids, %v", len(ids), err)
				}
			}
		})
	}
}

// BenchmarkLoadHF measures parsing a full tokenizer.json (Qwen3: 11 MB,
// 151643 tokens, 151387 merges).
func BenchmarkLoadHF(b *testing.B) {
	path := hfTestFile(b, "qwen3")
	for i := 0; i < b.N; i++ {
		if _, err := LoadHF(path); err != nil {
			b.Fatal(err)
		}
	}
}
