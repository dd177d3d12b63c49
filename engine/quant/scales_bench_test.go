package quant

import (
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
			if err := checkScales("s", st); err != nil {
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
