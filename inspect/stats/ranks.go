package stats

import (
	"fmt"
	"math"
)

// Diff compares two copies of the same tensor element by element (two ranks'
// copies of a replicated tensor, or two ranks holding the same shard).
// Elements are equal when their float32 values are equal or both are NaN.
type Diff struct {
	// Equal: every element is equal.
	Equal bool `json:"equal"`
	// Differ counts the unequal elements.
	Differ int64 `json:"differ"`
	// First is the flat index of the first unequal element (-1 when Equal),
	// with the two values there.
	First  int     `json:"first"`
	FirstA float64 `json:"first_a"`
	FirstB float64 `json:"first_b"`
	// MaxAbs is the largest |a-b| over the unequal elements, and MaxAt its
	// flat index (-1 when Equal). As torch's (a - b).abs().max(), a pair
	// with one NaN makes it NaN (the first such element is MaxAt) and a
	// finite value against ±Inf, or +Inf against -Inf, makes it +Inf: two
	// copies that differ only there are never shown a max |Δ| of 0.
	MaxAbs float64 `json:"max_abs_diff"`
	MaxAt  int     `json:"max_at"`
}

// ErrShape is wrapped by comparisons and gathers of tensors whose shapes do
// not fit together.
var ErrShape = fmt.Errorf("shape mismatch")

// Compare compares a and b element by element (two copies of one tensor,
// flattened row-major). Error: ErrShape naming both lengths when they
// differ.
func Compare(a, b []float32) (Diff, error) {
	if len(a) != len(b) {
		return Diff{}, fmt.Errorf("%w: %d elements vs %d", ErrShape, len(a), len(b))
	}
	d := Diff{Equal: true, First: -1, MaxAt: -1}
	for i, x := range a {
		y := b[i]
		if x == y || (x != x && y != y) {
			continue
		}
		if d.Equal {
			d.Equal, d.First, d.FirstA, d.FirstB = false, i, float64(x), float64(y)
		}
		d.Differ++
		if math.IsNaN(d.MaxAbs) {
			continue
		}
		if ad := math.Abs(float64(x) - float64(y)); ad > d.MaxAbs || math.IsNaN(ad) {
			d.MaxAbs, d.MaxAt = ad, i
		}
	}
	return d, nil
}

// Cosine is the cosine similarity dot / sqrt(aa·bb) of two vectors from
// their accumulated sums dot = Σ aᵢbᵢ, aa = Σ aᵢ², bb = Σ bᵢ² (float64, as
// torch.nn.functional.cosine_similarity without its eps): 1 for two zero
// vectors, 0 when only one is zero.
func Cosine(dot, aa, bb float64) float64 {
	if aa == 0 && bb == 0 {
		return 1
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return dot / math.Sqrt(aa*bb)
}
