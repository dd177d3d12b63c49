package model

import (
	"fmt"
	"strings"
)

// Fault kinds that change the computation: the building blocks of
// engine/nn consult Pass.Faults at their one place (the row-parallel
// all-reduce, the vocab-parallel embedding's lookup, the MoE router, the
// decoder layer's output). Each imitates a bug people hit; FaultDocs says
// which.
const (
	// FaultSkipAllReduce: a RowParallelLinear returns its rank's partial
	// sum without the all-reduce (o_proj, down_proj).
	FaultSkipAllReduce = "skip-allreduce"
	// FaultVocabPadding: the vocab-parallel embedding looks tokens up at
	// unpadded rank offsets (rank r from r·⌈vocab/world⌉) although the
	// weight rows are split by the padded vocabulary (a multiple of 64).
	FaultVocabPadding = "vocab-padding"
	// FaultRouterSoftmax: the MoE router scores with softmax instead of
	// sigmoid (scoring_func ignored).
	FaultRouterSoftmax = "router-softmax"
	// FaultRouterNoBias: the MoE router chooses without
	// e_score_correction_bias.
	FaultRouterNoBias = "router-no-bias"
	// FaultPerturbRank: one rank's replicated copy of a decoder layer's
	// hidden_states is scaled by 1 + Value (1e-2 when 0): a rank that
	// diverged (a nondeterministic kernel, a stale buffer).
	FaultPerturbRank = "perturb-rank"
	// FaultChunkNoContext: attention computes every token at position
	// Token or later as if the sequence started at Token (a chunked
	// prefill whose second chunk ran without the first chunk's KV cache);
	// positions, and so RoPE, continue.
	FaultChunkNoContext = "chunk-no-context"
)

// ChunkAttention applies FaultChunkNoContext at chunk k to an attention
// step's per-token cache rows base and positions pos (backend.AttnArgs):
// a token at position p ≥ k attends from its sequence's row k on, as
// position p − k. It returns new slices; base and pos are not changed.
func ChunkAttention(base, pos []int32, k int) ([]int32, []int32) {
	b2, p2 := append([]int32(nil), base...), append([]int32(nil), pos...)
	for t, p := range pos {
		if int(p) >= k {
			b2[t] += int32(k)
			p2[t] -= int32(k)
		}
	}
	return b2, p2
}

// Fault is one injected fault: its kind, the sites it applies to (a site
// path or a prefix of one, "model.layers.3"; "" for every site the kind
// applies to), the rank (-1: every rank) and a kind's parameter.
type Fault struct {
	Kind  string  `json:"kind"`
	Site  string  `json:"site,omitempty"`
	Rank  int     `json:"rank"`
	Value float64 `json:"value,omitempty"`
	// Token and Channel locate a fault at one element (a NaN at a
	// position).
	Token   int `json:"token,omitempty"`
	Channel int `json:"channel,omitempty"`
}

// String renders "skip-allreduce at model.layers.1.mlp.down_proj on rank 1".
func (f Fault) String() string {
	s := f.Kind
	if f.Value != 0 {
		s += fmt.Sprintf(" %g", f.Value)
	}
	if f.Token != 0 || f.Channel != 0 {
		s += fmt.Sprintf(" (token %d, channel %d)", f.Token, f.Channel)
	}
	if f.Site != "" {
		s += " at " + f.Site
	}
	if f.Rank >= 0 {
		s += fmt.Sprintf(" on rank %d", f.Rank)
	}
	return s
}

// Faults are the faults active in a pass (nil: none).
type Faults []Fault

// Find returns the first fault of kind that applies to site on rank.
func (fs Faults) Find(kind, site string, rank int) (Fault, bool) {
	for _, f := range fs {
		if f.Kind != kind || f.Rank >= 0 && f.Rank != rank {
			continue
		}
		if f.Site == "" || site == f.Site || strings.HasPrefix(site, f.Site+".") {
			return f, true
		}
	}
	return Fault{}, false
}

// Fault returns the fault of kind active at site on rank r in this pass.
func (r *Rank) Fault(kind string, site *Site) (Fault, bool) {
	if r.Pass == nil || len(r.Pass.Faults) == 0 {
		return Fault{}, false
	}
	return r.Pass.Faults.Find(kind, site.Path, r.Index)
}
