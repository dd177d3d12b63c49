package stats

import (
	"math"

	"hsdb/engine/tensor"
)

// Stats are the statistics hsdb prints for a tensor or a slice of one. Mean,
// Std, Min, Max, AbsMax and L2 are over the finite elements only (NaN and
// ±Inf are counted apart, so one NaN does not hide the rest of the tensor).
// When no element is finite (an all-NaN tensor, an empty shard) they are
// undefined: Defined is false, the fields hold 0, Get returns NaN for them
// and NullFields names them (front ends print "—" and JSON null).
//
// Std is the population standard deviation, sqrt(Σ(x-mean)²/n) with n the
// finite count (numpy.std's default ddof=0 and torch.std(unbiased=False);
// torch.Tensor.std() without arguments divides by n-1 instead, which differs
// by the factor sqrt(n/(n-1)): under 0.01% for any tensor of more than 5,000
// elements). L2 is the Frobenius norm sqrt(Σx²) (torch.linalg.norm of the
// flattened tensor).
type Stats struct {
	Count  int64   `json:"count"`
	NaN    int64   `json:"nan"`
	Inf    int64   `json:"inf"`
	Zeros  int64   `json:"zeros"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	AbsMax float64 `json:"absmax"`
	L2     float64 `json:"l2"`
}

// FromMoments derives Stats from one-pass accumulators (tensor.Moments, as a
// backend computes them where the data lives). The variance is
// E[x²] - E[x]², clamped at 0 against rounding; with float64 sums of float32
// data its relative error stays below 1e-9 unless |mean|/std exceeds 1e4.
func FromMoments(m tensor.Moments) Stats {
	s := Stats{Count: m.Count, NaN: m.NaN, Inf: m.Inf, Zeros: m.Zeros, Min: m.Min, Max: m.Max, AbsMax: m.AbsMax, L2: math.Sqrt(m.SumSq)}
	if n := float64(m.Finite()); n > 0 {
		s.Mean = m.Sum / n
		s.Std = math.Sqrt(math.Max(0, m.SumSq/n-s.Mean*s.Mean))
	}
	return s
}

// Of computes the Stats of float32 values in one pass.
func Of(v []float32) Stats { return FromMoments(tensor.MomentsF32(v)) }

// Finite returns the number of finite elements.
func (s Stats) Finite() int64 { return s.Count - s.NaN - s.Inf }

// Defined reports whether the statistics over finite elements (mean, std,
// min, max, absmax, l2) have a value: some element is finite.
func (s Stats) Defined() bool { return s.Finite() > 0 }

// finiteStats are the statistics taken over finite elements only.
var finiteStats = []string{"mean", "std", "min", "max", "absmax", "l2"}

// IsFiniteStat reports whether the statistic called name is taken over the
// finite elements (and so is undefined when there are none).
func IsFiniteStat(name string) bool {
	for _, n := range finiteStats {
		if n == name || (name == "norm" && n == "l2") {
			return true
		}
	}
	return false
}

// NullFields returns the JSON names of the statistics that are undefined
// (mean, std, min, max, absmax, l2 when no element is finite), nil when
// all are defined: encoders write them as null rather than 0.
func (s Stats) NullFields() []string {
	if s.Defined() {
		return nil
	}
	return append([]string(nil), finiteStats...)
}

// Bad reports whether any element is NaN or ±Inf.
func (s Stats) Bad() bool { return s.NaN > 0 || s.Inf > 0 }

// Get returns the statistic called name ("mean", "std", "min", "max",
// "absmax", "l2" or its alias "norm", "nan", "inf", "zeros", "count") and
// whether the name is known; an undefined statistic (no finite element) is
// NaN, so that every comparison with it is false. The names are those of
// the debugger's conditions and of `set stats`.
func (s Stats) Get(name string) (float64, bool) {
	if !s.Defined() && IsFiniteStat(name) {
		return math.NaN(), true
	}
	switch name {
	case "mean":
		return s.Mean, true
	case "std":
		return s.Std, true
	case "min":
		return s.Min, true
	case "max":
		return s.Max, true
	case "absmax":
		return s.AbsMax, true
	case "l2", "norm":
		return s.L2, true
	case "nan":
		return float64(s.NaN), true
	case "inf":
		return float64(s.Inf), true
	case "zeros":
		return float64(s.Zeros), true
	case "count":
		return float64(s.Count), true
	}
	return 0, false
}

// StatNames lists the names Get accepts, in the order hsdb prints them.
var StatNames = []string{"mean", "std", "min", "max", "absmax", "l2", "nan", "inf", "zeros", "count"}
