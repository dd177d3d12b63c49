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
