package stats

import "math"

// Hist is a histogram of the finite values of a tensor over Bins equal-width
// bins spanning [Lo, Hi] (the finite minimum and maximum); the last bin
// includes Hi. NaN and Inf count the values left out. When every finite
// value is equal (Lo == Hi) there is a single bin; when none is finite
// there is none (Counts empty, Lo and Hi without meaning: NullFields).
type Hist struct {
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Counts []int64 `json:"counts"`
	NaN    int64   `json:"nan"`
	Inf    int64   `json:"inf"`
}

// NullFields returns the JSON names of the fields without a value: Lo and
// Hi when no value is finite (no bins), for encoders that write them as
// null.
func (h Hist) NullFields() []string {
	if len(h.Counts) > 0 {
		return nil
	}
	return []string{"lo", "hi"}
}

// Edge returns the lower edge of bin i (Edge(len(Counts)) is Hi).
func (h Hist) Edge(i int) float64 {
	if i >= len(h.Counts) {
		return h.Hi
	}
	return h.Lo + (h.Hi-h.Lo)*float64(i)/float64(len(h.Counts))
}

// Histogram bins v into bins equal-width bins (bins < 1 means 1) between the
// finite minimum and maximum, in two passes over v.
func Histogram(v []float32, bins int) Hist {
	bins = max(bins, 1)
	h := Hist{}
	first := true
	for _, x := range v {
		f := float64(x)
		switch {
		case f != f:
			h.NaN++
			continue
		case math.IsInf(f, 0):
			h.Inf++
			continue
		}
		if first {
			h.Lo, h.Hi, first = f, f, false
		}
		h.Lo, h.Hi = math.Min(h.Lo, f), math.Max(h.Hi, f)
	}
	if first {
		return h
	}
	if h.Lo == h.Hi {
		bins = 1
	}
	h.Counts = make([]int64, bins)
	w := (h.Hi - h.Lo) / float64(bins)
	for _, x := range v {
		f := float64(x)
		if f != f || math.IsInf(f, 0) {
			continue
		}
		i := bins - 1
		if w > 0 {
			i = min(int((f-h.Lo)/w), bins-1)
		}
		h.Counts[i]++
	}
	return h
}
