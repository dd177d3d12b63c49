package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// tiktokenBenchText is the text scripts/tiktoken_reference.py --bench-json
// times tiktoken on: the lines of strings.txt and tiktoken_strings.txt
// joined by newlines, repeated to just over 1 MiB.
func tiktokenBenchText(b testing.TB) string {
	b.Helper()
	var all []string
	for _, f := range []string{"testdata/strings.txt", "testdata/tiktoken_strings.txt"} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
			var s string
			if err := json.Unmarshal(line, &s); err != nil {
				b.Fatalf("%s: %v", f, err)
			}
			all = append(all, s)
		}
	}
	one := strings.Join(all, "\n")
	return strings.Repeat(one+"\n", (1<<20)/len(one)+1)
}

// BenchmarkTiktokenEncode reports encode throughput in tokens/s on the
// text the reference script times tiktoken on, for cl100k_base with its
// own pattern and, when HSDB_TIKTOKEN_O200K names o200k_base.tiktoken,
// o200k_base with its own pattern and with Kimi's (each with the
// encoding's own special tokens allowed, without Kimi's text cutting, as
// the script times it). Run it with -cpu 1: tiktoken encodes on one thread. The "nocache"
// variants turn off the piece cache, which the repeated text favours
// (tiktoken has none).
func BenchmarkTiktokenEncode(b *testing.B) {
	text := tiktokenBenchText(b)
	type tc struct {
		name string
		load func(b *testing.B) *Tiktoken
	}
	cases := []tc{{"cl100k_base", func(b *testing.B) *Tiktoken {
		tk, err := NewTiktoken("cl100k_base", rankFileB(b, "testdata/cl100k_base.tiktoken.gz"), PatternCL100K, cl100kSpecials, -1, 100257)
		if err != nil {
			b.Fatal(err)
		}
		return tk
	}}}
	if p := os.Getenv("HSDB_TIKTOKEN_O200K"); p != "" {
		for _, pat := range []struct{ name, pattern string }{{"o200k_base", PatternO200K}, {"o200k_base+kimi", PatternKimi}} {
			cases = append(cases, tc{pat.name, func(b *testing.B) *Tiktoken {
				tk, err := NewTiktoken(pat.name, rankFileB(b, p), pat.pattern, o200kSpecials, -1, 199999)
				if err != nil {
					b.Fatal(err)
				}
				return tk
			}})
		}
	}
	for _, c := range cases {
		for _, noCache := range []bool{false, true} {
			name := c.name
			if noCache {
				name += "/nocache"
			}
			b.Run(name, func(b *testing.B) {
				tk := c.load(b)
				tk.noCache = noCache
				b.SetBytes(int64(len(text)))
				b.ResetTimer()
				n := 0
				for i := 0; i < b.N; i++ {
					ids, err := tk.Encode(text)
					if err != nil || len(ids) == 0 {
						b.Fatalf("Encode: %d ids, %v", len(ids), err)
					}
					n += len(ids)
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
				b.ReportMetric(float64(n/b.N), "tokens")
			})
		}
	}
}

// The special tokens of cl100k_base and o200k_base (tiktoken_ext
// openai_public.py), which the reference script's timing uses too.
var (
	cl100kSpecials = map[string]int32{"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
	o200kSpecials  = map[string]int32{"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
)

func rankFileB(b *testing.B, path string) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		return gunzip(b, data)
	}
	return data
}
