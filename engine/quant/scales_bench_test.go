package quant

import (
	"fmt"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// BenchmarkCheckScales scans a 64 MiB bf16 scale grid (Kimi-K2's int4
// experts carry one bf16 scale per 32 weights, so a rank's scales are
// gigabytes) beside a copy of the same bytes, the least any upload of them
// costs: the scan's ns/op over the copy's is its share of a load.
func BenchmarkCheckScales(b *testing.B) {
	const rows, cols = 4096, 8192
	st := tensor.FromF32(make([]float32, rows*cols), rows, cols).Convert(tensor.BF16)
	dst := make([]byte, len(st.Data))
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(st.Data)))
		for b.Loop() {
			if err := checkScales("s", st, int4Max, "int4 values reach -8"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(st.Data)))
		for b.Loop() {
			copy(dst, st.Data)
		}
	})
}

// BenchmarkIgnoreList matches the 23,424 routed-expert linear modules of a
// Kimi-K2-sized model (61 layers × 384 experts; 3 projections cut to 1
// here) against an ignore list of 4 entries, Kimi-K2's own, and of 20,000
// exact module names, as llm-compressor writes them: the long list's
// ns/op over the short one's is what listing names costs a plan or a load.
func BenchmarkIgnoreList(b *testing.B) {
	var modules []string
	for l := range 61 {
		for e := range 384 {
			modules = append(modules, fmt.Sprintf("model.layers.%d.mlp.experts.%d.down_proj", l, e))
		}
	}
	kimi := mustParse(b, kimiQuantConfig)
	var names []string
	for i := range 20000 {
		names = append(names, fmt.Sprintf("%q", fmt.Sprintf("model.layers.%d.self_attn.o_proj_%d", i%61, i)))
	}
	long := mustParse(b, strings.Replace(kimiQuantConfig, `"ignore": [`, `"ignore": [`+strings.Join(names, ", ")+", ", 1))
	for _, c := range []struct {
		name string
		s    *Compressed
	}{{"kimi-4", kimi}, {"exact-20000", long}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, m := range modules {
					if g, _ := c.s.group(m); g == nil {
						b.Fatalf("%s not quantized", m)
					}
				}
			}
		})
	}
}
