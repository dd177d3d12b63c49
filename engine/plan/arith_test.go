package plan

import (
	"errors"
	"testing"
)

// TestCheckedArithmetic: products and sums past int64 are reported, never
// wrapped (2^40 heads × 192 × 1536 × 2^20 tokens wraps a plain int64).
func TestCheckedArithmetic(t *testing.T) {
	if p, ok := mul(1<<40, 192, 1536); !ok || p != (1<<40)*192*1536 {
		t.Errorf("mul = %d, %v", p, ok)
	}
	if _, ok := mul(1<<40, 192, 1536, 1<<20); ok {
		t.Error("2^40·192·1536·2^20 did not overflow")
	}
	if _, ok := mul(-1, 2); ok {
		t.Error("a negative factor was accepted")
	}
	var c counter
	c.add(1<<62, 1)
	c.add(1<<62, 1)
	if _, err := c.value("sum"); !errors.Is(err, ErrOverflow) {
		t.Errorf("2^62 + 2^62: err = %v", err)
	}
	if _, ok := numel([]int{1 << 31, 1 << 31, 1 << 2}); ok {
		t.Error("numel 2^64 did not overflow")
	}
}

// TestFormatBytesSmall: the KV cache of the embedded stories260K at --tp 2
// and 4096 tokens is 2 kv heads × 2 (K, V) × head_dim 8 × 5 layers × 4096
// tokens × 4 bytes = 2,621,440 bytes = 2.5 MiB, which plan printed as
// "2 MiB". Below 10 units one decimal is kept.
func TestFormatBytesSmall(t *testing.T) {
	for n, want := range map[int64]string{
		2 * 2 * 8 * 5 * 4096 * 4: "2.5 MiB",
		287834112:                "274 MiB", // 576 × 61 × 4096 × 2: DeepSeek-V3's MLA cache, 274.5 MiB
		1536:                     "1.5 KiB",
		10*1024 - 1:              "10 KiB", // 9.999 KiB rounds to 10
		900:                      "900 B",
		3 << 29:                  "1.5 GiB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
