package plan

import (
	"fmt"
	"math/bits"
)

// ErrOverflow is returned when a byte count does not fit in int64: sizes no
// machine holds, from a config whose fields passed their individual bounds
// but whose products do not.
var ErrOverflow = fmt.Errorf("byte count overflows int64")

// counter accumulates a non-negative byte count and remembers an overflow
// instead of wrapping around.
type counter struct {
	n        int64
	overflow bool
}

// mul returns the product of non-negative factors and false when it does not
// fit in int64 (or a factor is negative).
func mul(factors ...int64) (int64, bool) {
	p := uint64(1)
	for _, f := range factors {
		if f < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(f))
		if hi != 0 || lo > 1<<63-1 {
			return 0, false
		}
		p = lo
	}
	return int64(p), true
}

// add adds the product of factors to c.
func (c *counter) add(factors ...int64) {
	p, ok := mul(factors...)
	if !ok || c.n > 1<<63-1-p {
		c.overflow = true
		return
	}
	c.n += p
}

// value returns the count, or ErrOverflow naming what was counted.
func (c *counter) value(what string) (int64, error) {
	if c.overflow {
		return 0, fmt.Errorf("%s: %w", what, ErrOverflow)
	}
	return c.n, nil
}

// numel returns the element count of shape, or false on overflow.
func numel(shape []int) (int64, bool) {
	f := make([]int64, len(shape))
	for i, s := range shape {
		f[i] = int64(s)
	}
	return mul(f...)
}
