package model

import "fmt"

// Even returns rank's [start, end) when n is split evenly over world ranks
// (vLLM's divide(): n must be a multiple of world; the caller validates).
func Even(n, world, rank int) [2]int {
	per := n / world
	return [2]int{rank * per, (rank + 1) * per}
}

// EvenRanges returns Even for every rank.
func EvenRanges(n, world int) [][2]int {
	out := make([][2]int, world)
	for r := range out {
		out[r] = Even(n, world, r)
	}
	return out
}

// HeadPlan is how attention heads are split over ranks, as vLLM's
// QKVParallelLinear does: query heads evenly; key/value heads evenly when
// there are at least as many as ranks, otherwise each kv head is replicated
// on world/kvHeads consecutive ranks.
type HeadPlan struct {
	Heads, KVHeads int // total
	QPerRank       int
	KVPerRank      int
	world          int
}

// PlanHeads checks the split of heads and kvHeads over world ranks and
// returns the plan; the error says which count does not divide.
func PlanHeads(heads, kvHeads, world int) (HeadPlan, error) {
	if heads%world != 0 {
		return HeadPlan{}, fmt.Errorf("num_attention_heads %d is not divisible by --tp %d", heads, world)
	}
	if kvHeads <= 0 || heads%kvHeads != 0 {
		return HeadPlan{}, fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", heads, kvHeads)
	}
	p := HeadPlan{Heads: heads, KVHeads: kvHeads, QPerRank: heads / world, world: world}
	switch {
	case kvHeads >= world && kvHeads%world == 0:
		p.KVPerRank = kvHeads / world
	case kvHeads < world && world%kvHeads == 0:
		p.KVPerRank = 1
	default:
		return HeadPlan{}, fmt.Errorf("num_key_value_heads %d and --tp %d: one must divide the other", kvHeads, world)
	}
	return p, nil
}

// Q returns rank's query heads [start, end).
func (p HeadPlan) Q(rank int) [2]int { return [2]int{rank * p.QPerRank, (rank + 1) * p.QPerRank} }

// KV returns rank's kv heads [start, end).
func (p HeadPlan) KV(rank int) [2]int {
	if p.KVHeads >= p.world {
		return [2]int{rank * p.KVPerRank, (rank + 1) * p.KVPerRank}
	}
	h := rank * p.KVHeads / p.world
	return [2]int{h, h + 1}
}

// Scaled multiplies a head range by the head width: the feature columns.
func Scaled(r [2]int, width int) [2]int { return [2]int{r[0] * width, r[1] * width} }

// VocabPlan is vLLM's VocabParallelEmbedding split: the vocabulary padded to
// a multiple of 64 (of 64·world when 64 does not divide evenly), then split
// evenly; a rank's range may run past the real vocabulary.
type VocabPlan struct {
	Vocab, Padded, PerRank int
}

// PlanVocab returns the vocab split for world ranks.
func PlanVocab(vocab, world int) VocabPlan {
	padded := (vocab + 63) / 64 * 64
	if padded%world != 0 {
		padded = (vocab + 64*world - 1) / (64 * world) * (64 * world)
	}
	return VocabPlan{Vocab: vocab, Padded: padded, PerRank: padded / world}
}

// Range returns rank's [start, end) of the padded vocabulary.
func (v VocabPlan) Range(rank int) [2]int { return [2]int{rank * v.PerRank, (rank + 1) * v.PerRank} }

// Ranges returns Range for every rank of world.
func (v VocabPlan) Ranges(world int) [][2]int {
	out := make([][2]int, world)
	for r := range out {
		out[r] = v.Range(r)
	}
	return out
}
