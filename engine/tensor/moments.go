package tensor

import "math"

// Moments holds the one-pass accumulators of a tensor slice from which every
// statistic hsdb prints is derived (inspect/stats.Stats): the element count, the
// NaN, ±Inf and exact-zero counts, and over the finite elements only their
// sum, sum of squares, minimum, maximum and largest magnitude. Sums are
// float64 whatever the tensor's dtype. Backends compute Moments where the
// data lives (the CUDA backend on the device) so that only this struct is
// copied to the host. Min, Max and AbsMax are 0 when no element is finite.
type Moments struct {
	Count  int64   // elements, non-finite included
	NaN    int64   // NaN elements
	Inf    int64   // ±Inf elements
	Zeros  int64   // elements exactly ±0
	Sum    float64 // Σ x over the finite elements
	SumSq  float64 // Σ x² over the finite elements
	Min    float64 // smallest finite element
	Max    float64 // largest finite element
	AbsMax float64 // largest |x| over the finite elements
}

// Finite returns the number of finite elements.
func (m Moments) Finite() int64 { return m.Count - m.NaN - m.Inf }

// Add folds one value into m.
func (m *Moments) Add(v float64) {
	m.Count++
	switch {
	case v != v:
		m.NaN++
		return
	case math.IsInf(v, 0):
		m.Inf++
		return
	case v == 0:
		m.Zeros++
	}
	if m.Finite() == 1 {
		m.Min, m.Max = v, v
	} else {
		m.Min = math.Min(m.Min, v)
		m.Max = math.Max(m.Max, v)
	}
	m.AbsMax = math.Max(m.AbsMax, math.Abs(v))
	m.Sum += v
	m.SumSq += v * v
}

// Merge folds o into m, as if every value of o had been added to m.
func (m *Moments) Merge(o Moments) {
	if o.Finite() > 0 {
		if m.Finite() == 0 {
			m.Min, m.Max = o.Min, o.Max
		} else {
			m.Min = math.Min(m.Min, o.Min)
			m.Max = math.Max(m.Max, o.Max)
		}
		m.AbsMax = math.Max(m.AbsMax, o.AbsMax)
	}
	m.Count += o.Count
	m.NaN += o.NaN
	m.Inf += o.Inf
	m.Zeros += o.Zeros
	m.Sum += o.Sum
	m.SumSq += o.SumSq
}

// MomentsF32 computes the Moments of a float32 slice in one pass.
func MomentsF32(v []float32) Moments {
	var m Moments
	for _, x := range v {
		m.Add(float64(x))
	}
	return m
}
