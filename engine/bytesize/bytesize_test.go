package bytesize

import (
	"math"
	"testing"
)

// TestBinaryDecimal: sizes by hand. 2.5 MiB = 2621440 B (plan printed it
// "2 MiB"); 1016 KiB = 1040384 B stays in KiB; 1048575 B is 1023.999 KiB,
// which rounds to 1024 and so is written "1 MiB"; 141 GiB = 151397597184
// B = 151.4 GB to three digits, "151 GB"; 84.3e9 B = 78.51 GiB; 1.17 GiB
// = 1256277934 B (1.17 × 2^30 = 1256277934.08). Bytes under the unit are
// exact. MinInt64 = -8 EiB exactly.
func TestBinaryDecimal(t *testing.T) {
	for _, c := range []struct {
		n      int64
		bin, d string
	}{
		{0, "0 B", "0 B"},
		{900, "900 B", "900 B"},
		{1000, "1000 B", "1 kB"},
		{1023, "1023 B", "1.02 kB"},
		{1024, "1 KiB", "1.02 kB"},
		{1536, "1.5 KiB", "1.54 kB"},
		{1040384, "1016 KiB", "1.04 MB"},
		{1048575, "1 MiB", "1.05 MB"},
		{2621440, "2.5 MiB", "2.62 MB"},
		{5 << 20, "5 MiB", "5.24 MB"},
		{547356672, "522 MiB", "547 MB"},
		{1256277934, "1.17 GiB", "1.26 GB"},
		{84_300_000_000, "78.5 GiB", "84.3 GB"},
		{151397597184, "141 GiB", "151 GB"},
		{999_600, "976 KiB", "1 MB"},
		{-2621440, "-2.5 MiB", "-2.62 MB"},
		{math.MinInt64, "-8 EiB", "-9.22 EB"},
		{math.MaxInt64, "8 EiB", "9.22 EB"},
	} {
		if got := Binary(c.n); got != c.bin {
			t.Errorf("Binary(%d) = %q, want %q", c.n, got, c.bin)
		}
		if got := Decimal(c.n); got != c.d {
			t.Errorf("Decimal(%d) = %q, want %q", c.n, got, c.d)
		}
	}
}

// TestBinaryPlanSizes: the KV cache of the embedded stories260K at --tp 2
// and 4096 tokens is 2 kv heads × 2 (K, V) × head_dim 8 × 5 layers × 4096
// tokens × 4 bytes = 2,621,440 bytes = 2.5 MiB, which plan printed as
// "2 MiB"; three significant digits keep the half.
func TestBinaryPlanSizes(t *testing.T) {
	for n, want := range map[int64]string{
		2 * 2 * 8 * 5 * 4096 * 4: "2.5 MiB",
		287834112:                "274 MiB", // 576 × 61 × 4096 × 2: DeepSeek-V3's MLA cache, 274.5 MiB
		1536:                     "1.5 KiB",
		10*1024 - 1:              "10 KiB", // 9.999 KiB rounds to 10
		900:                      "900 B",
		3 << 29:                  "1.5 GiB",
	} {
		if got := Binary(n); got != want {
			t.Errorf("Binary(%d) = %q, want %q", n, got, want)
		}
	}
}
