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
