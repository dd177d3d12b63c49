package model

import (
	"fmt"
	"strconv"
	"strings"
)

// LayerRange is a closed range of decoder layers, First..Last (0-based), as
// the user gives it with --load-layers A-B: only the embeddings, these layers, the
// final norm and the LM head are built and loaded. Layer First then receives
// the embeddings as its input, as layer 0 does in the full model.
type LayerRange struct{ First, Last int }

// ParseLayerRange parses "A-B" or a single layer "A" (0-based, A <= B).
// Errors name the text and what was expected.
func ParseLayerRange(s string) (LayerRange, error) {
	a, b, found := strings.Cut(strings.TrimSpace(s), "-")
	first, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return LayerRange{}, fmt.Errorf("--load-layers %q: want A-B or A (decoder layer indices from 0)", s)
	}
	last := first
	if found {
		if last, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return LayerRange{}, fmt.Errorf("--load-layers %q: want A-B or A (decoder layer indices from 0)", s)
		}
	}
	if first < 0 || last < first {
		return LayerRange{}, fmt.Errorf("--load-layers %q: want 0 <= A <= B", s)
	}
	return LayerRange{First: first, Last: last}, nil
}

// Contains reports whether decoder layer i is in the range.
func (r LayerRange) Contains(i int) bool { return i >= r.First && i <= r.Last }

// String renders the range as the flag takes it: "58-60".
func (r LayerRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Check returns an error unless the range lies within a model of n decoder
// layers (num_hidden_layers).
func (r LayerRange) Check(n int) error {
	if r.First < 0 || r.Last < r.First || r.Last >= n {
		return fmt.Errorf("--load-layers %s: the model has decoder layers 0-%d (num_hidden_layers %d)", r, n-1, n)
	}
	return nil
}

// LayerSelector is implemented by a Config that can build and load only a
// range of its decoder layers (--load-layers A-B), so that a few layers of a model
// too large for the machine can be run. The engine calls SelectLayers before
// Validate, Tree and Load; an error says why the range does not fit.
type LayerSelector interface {
	SelectLayers(r LayerRange) error
}

// ExpertParallel is implemented by a Config with routed experts. With on, the
// experts of every MoE layer are placed whole on the ranks (vLLM's
// --enable-expert-parallel: rank r holds a contiguous block of experts, every
// rank routes every token and computes the tokens sent to its experts, and
// the ranks' outputs are summed); otherwise each expert's intermediate
// dimension is split over the ranks (tensor-parallel experts, vLLM's default,
// hsdb's --moe tp). The engine calls it before Validate, Tree and Load.
type ExpertParallel interface {
	SetExpertParallel(on bool) error
}

// CheckStages returns an error unless a model of n decoder layers
// (num_hidden_layers) can be split into pp pipeline stages (--pp) as
// vLLM's get_pp_indices splits them: at least one layer per stage, and no
// --load-layers range r beside them (each stage's layers come from --pp).
// pp <= 1 is one stage: only its range is checked, by LayerRange.Check.
func CheckStages(n, pp int, r *LayerRange) error {
	if pp <= 1 {
		return nil
	}
	if r != nil {
		return fmt.Errorf("--pp %d with --load-layers %s: each stage's layers come from --pp; give one or the other", pp, r)
	}
	if n < pp {
		return fmt.Errorf("--pp %d: the model has %d decoder layers; every stage needs at least one", pp, n)
	}
	return nil
}
