package nn

import "hsdb/engine/model"

// Split is how one dimension of a weight is divided over the ranks (a
// column-parallel linear's output rows, a row-parallel linear's input
// columns): Units units (attention heads, or single features when Width is
// 1) of Width features each, rank r holding units Ranges[r] = [start, end).
// Ranges nil means every rank holds every unit (replicated). Ranges of
// different ranks may coincide (kv heads replicated when
// num_key_value_heads < world size, as vLLM's QKVParallelLinear does).
type Split struct {
	Units, Width int
	Ranges       [][2]int
}

// Replicated returns the split of units×width features that every rank
// holds whole.
func Replicated(units, width int) Split { return Split{Units: units, Width: width} }

// Even returns units×width features split evenly over b's ranks by units
// (vLLM's divide(): the caller has validated that units divides).
func Even(b Builder, units, width int) Split {
	return Split{Units: units, Width: width, Ranges: model.EvenRanges(units, b.World())}
}

// Heads returns the split of units heads of width features whose per-rank
// head ranges are f(rank) (model.HeadPlan.Q or KV).
func Heads(b Builder, units, width int, f func(rank int) [2]int) Split {
	return Split{Units: units, Width: width, Ranges: b.Ranges(f)}
}

// Size returns the full feature count, Units·Width.
func (s Split) Size() int { return s.Units * s.Width }

// Local returns rank's units [start, end).
func (s Split) Local(rank int) [2]int {
	if s.Ranges == nil {
		return [2]int{0, s.Units}
	}
	return s.Ranges[rank]
}

// Features returns rank's features [start, end).
func (s Split) Features(rank int) [2]int { return model.Scaled(s.Local(rank), s.Width) }

// FeatureRanges returns every rank's features, or nil when replicated: a
// model.Param's Ranges.
func (s Split) FeatureRanges() [][2]int {
	if s.Ranges == nil {
		return nil
	}
	out := make([][2]int, len(s.Ranges))
	for r := range out {
		out[r] = s.Features(r)
	}
	return out
}

// dim returns the model.Param dimension a split along d means: d, or -1
// (replicated).
func (s Split) dim(d int) int {
	if s.Ranges == nil {
		return -1
	}
	return d
}

// Label returns how a tensor holding rank's units, each width columns wide
// ([tokens, units_r·width]), relates to the full [tokens, Units·width]:
// Sharded over those columns, or Replicated.
func (s Split) Label(rank, width int) model.Sharding {
	if s.Ranges == nil {
		return Rep
	}
	return Sharded(model.Scaled(s.Local(rank), width), s.Units*width)
}

// Rep labels a tensor every rank holds whole.
var Rep = model.Sharding{Kind: model.Replicated}

// Partial labels a rank's addend of a sum over ranks (a row-parallel
// linear's output before its all-reduce).
var Partial = model.Sharding{Kind: model.Partial}

// Sharded labels columns r = [start, end) of a tensor of full columns.
func Sharded(r [2]int, full int) model.Sharding {
	return model.Sharding{Kind: model.Sharded, Start: r[0], End: r[1], Full: full}
}
