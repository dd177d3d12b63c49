// Package moeref is the host reference of DeepSeek MoE routing: the pure-Go
// selection rule that the CPU backend runs and that tests hold every
// device's Route to (identical expert ids). engine/nn's router and the
// CPU backend call it.
//
// It imports engine/backend (the gate's parameters) only: no device code,
// no engine/model, engine/nn or architecture.
package moeref

import (
	"math"
	"sort"

	"hsdb/engine/backend"
)

// Route applies a DeepSeek MoE gate's selection rule a on the host to the
// router logits [tokens, experts] (computed in float32 from the gate weight,
// as HF's DeepseekV3TopkRouter and vLLM's GateLinear do). It follows HF
// transformers 5.x:
//
//   - scores = sigmoid(logits) (DeepSeek-V3, Kimi-K2: scoring_func "sigmoid")
//     or softmax(logits) over the experts (DeepSeek-V2: "softmax");
//   - scores for choice = scores + e_score_correction_bias (V3's
//     auxiliary-loss-free balancing bias; used for the choice only);
//   - experts are split into n_group groups of consecutive ids; a group's
//     score is the sum of its two best choice scores when the bias is in use
//     (V3's noaux_tc), else its best score (V2's group_limited_greedy); the
//     topk_group best groups are kept and every expert outside them is
//     excluded (choice score -inf, as DeepSeek's own code, vLLM and HF since
//     transformers PR 45441 do; HF had masked with 0.0, which lets an
//     excluded expert win when the bias makes the kept scores negative);
//   - the top_k experts by choice score are chosen (ties: lower id first);
//   - their weights are the scores without the bias, renormalised to sum 1
//     (+1e-20) when norm_topk_prob, then multiplied by routed_scaling_factor.
//
// All arithmetic is float32 as PyTorch's, so the chosen ids match HF's.
//
// It returns, for logits [tokens·experts] (row-major), the chosen expert ids
// [tokens·TopK] (best first) and their weights [tokens·TopK].
func Route(g *backend.RouteArgs, logits []float32, tokens int) (ids []int32, weights []float32) {
	E, k := g.Experts, g.TopK
	ids = make([]int32, tokens*k)
	weights = make([]float32, tokens*k)
	scores := make([]float32, E)
	choice := make([]float32, E)
	order := make([]int, E)
	per := E / max(g.Groups, 1)
	groupScore := make([]float32, max(g.Groups, 1))
	groupOrder := make([]int, len(groupScore))
	keep := make([]bool, len(groupScore))
	for t := range tokens {
		row := logits[t*E : (t+1)*E]
		if g.Sigmoid {
			for e, x := range row {
				scores[e] = sigmoid32(x)
			}
		} else {
			softmax32(scores, row)
		}
		for e := range choice {
			choice[e] = scores[e]
			if g.Bias != nil {
				choice[e] += g.Bias[e]
			}
		}
		if g.Groups > 1 && g.TopKGroup < g.Groups {
			for gi := range groupScore {
				grp := choice[gi*per : (gi+1)*per]
				if g.Bias != nil {
					groupScore[gi] = top2Sum(grp)
				} else {
					groupScore[gi] = maxOf(grp)
				}
			}
			topIndices(groupOrder, groupScore)
			clear(keep)
			for _, gi := range groupOrder[:g.TopKGroup] {
				keep[gi] = true
			}
			for e := range choice {
				if !keep[e/per] {
					choice[e] = float32(math.Inf(-1))
				}
			}
		}
		topIndices(order, choice)
		var sum float32
		for j, e := range order[:k] {
			ids[t*k+j] = int32(e)
			weights[t*k+j] = scores[e]
			sum += scores[e]
		}
		w := weights[t*k : (t+1)*k]
		if g.NormTopK {
			den := sum + 1e-20
			for j := range w {
				w[j] /= den
			}
		}
		for j := range w {
			w[j] *= g.Scale
		}
	}
	return ids, weights
}

// ExpertLoad counts, for ids [tokens·k], how many tokens each of experts
// experts received: tokens per expert [experts].
func ExpertLoad(ids []int32, experts int) []int64 {
	n := make([]int64, experts)
	for _, e := range ids {
		n[e]++
	}
	return n
}

// sigmoid32 is torch.sigmoid in float32: 1/(1+e^-x), correctly rounded.
func sigmoid32(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// softmax32 writes softmax(x) to dst: exp(x - max) / Σ, in float32 as
// PyTorch's softmax (the max subtracted first; the sum accumulated in float64
// and rounded, which is at least as accurate).
func softmax32(dst, x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		dst[i] = e
		sum += float64(e)
	}
	s := float32(sum)
	for i := range dst {
		dst[i] /= s
	}
}

// top2Sum returns the sum of the two largest values of x (its only value
// when len(x) is 1), as torch.topk(2).sum().
func top2Sum(x []float32) float32 {
	if len(x) == 1 {
		return x[0]
	}
	a, b := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, v := range x {
		if v > a {
			a, b = v, a
		} else if v > b {
			b = v
		}
	}
	return a + b
}

func maxOf(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// topIndices fills order with 0..len(v)-1 sorted by v descending, ties and
// NaN by lower index first (NaN sorts last).
func topIndices(order []int, v []float32) {
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := v[order[a]], v[order[b]]
		if x != x {
			return false
		}
		if y != y {
			return true
		}
		return x > y
	})
}
