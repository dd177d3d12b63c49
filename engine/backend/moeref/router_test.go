package moeref

import (
	"math"
	"testing"

	"hsdb/engine/backend"
)

// Routing cases derived by hand from HF transformers 5.x's rules
// (DeepseekV3MoE.route_tokens_to_experts, DeepseekV2Moe.route_tokens_to_experts).

func sig(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func checkRoute(t *testing.T, name string, g *backend.RouteArgs, logits []float32, wantIDs []int32, wantW []float64) {
	t.Helper()
	ids, w := Route(g, logits, 1)
	if len(ids) != len(wantIDs) || len(w) != len(wantW) {
		t.Fatalf("%s: ids %v weights %v, want %v %v", name, ids, w, wantIDs, wantW)
	}
	for j := range wantIDs {
		if ids[j] != wantIDs[j] || !(math.Abs(float64(w[j])-wantW[j]) <= 1e-6) {
			t.Fatalf("%s: ids %v weights %v, want %v %v", name, ids, w, wantIDs, wantW)
		}
	}
}

// TestRouterGroupedSigmoid: 8 experts in 4 groups of 2, keep 2 groups, top 2,
// norm_topk_prob, routed_scaling_factor 2.5.
//
// logits x = [3, -3, 2.5, 2.4, 0, 0, -1, 2.8]; sigmoid ≈ [.9526, .0474,
// .9241, .9168, .5, .5, .2689, .9427]. Group scores (sum of the two best):
// g0 1.0, g1 1.8409, g2 1.0, g3 1.2116, so groups 1 and 3 are kept; the best
// two of experts {2, 3, 6, 7} are 7 then 2, although expert 0 (.9526) has
// the highest score of all.
func TestRouterGroupedSigmoid(t *testing.T) {
	x := []float32{3, -3, 2.5, 2.4, 0, 0, -1, 2.8}
	g := &backend.RouteArgs{Experts: 8, TopK: 2, Groups: 4, TopKGroup: 2, Sigmoid: true, Bias: make([]float32, 8), NormTopK: true, Scale: 2.5}
	s7, s2 := sig(2.8), sig(2.5)
	checkRoute(t, "no bias", g, x, []int32{7, 2}, []float64{2.5 * s7 / (s7 + s2), 2.5 * s2 / (s7 + s2)})

	// A bias of +0.7 on expert 6 lifts its choice score to .9689 (> .9427)
	// and group 3 stays kept (1.9116): experts 6 and 7 are chosen, and
	// their weights use the scores without the bias.
	g.Bias[6] = 0.7
	s6 := sig(-1)
	checkRoute(t, "bias", g, x, []int32{6, 7}, []float64{2.5 * s6 / (s6 + s7), 2.5 * s7 / (s6 + s7)})

	// A bias of -1.5 on every expert makes every choice score negative.
	// Groups 1 and 3 still win (-1.159, -1.788 against -2.0, -2.0) and the
	// other groups stay excluded (masked with -inf, not 0.0, which would
	// beat every negative score): the best two of {2: -.5759, 3: -.5832,
	// 6: -1.2311, 7: -.5573} are 7 and 2, as without the bias.
	for e := range g.Bias {
		g.Bias[e] = -1.5
	}
	checkRoute(t, "negative scores", g, x, []int32{7, 2}, []float64{2.5 * s7 / (s7 + s2), 2.5 * s2 / (s7 + s2)})
}

// TestRouterSoftmax: DeepSeek-V2's greedy and group-limited greedy routing.
func TestRouterSoftmax(t *testing.T) {
	// Greedy top 2 of softmax([1, 2, 3, 4]): experts 3 and 2, weights their
	// probabilities (not renormalised), scaled by 1.
	sum := math.Exp(1) + math.Exp(2) + math.Exp(3) + math.Exp(4)
	g := &backend.RouteArgs{Experts: 4, TopK: 2, Groups: 1, TopKGroup: 1, Scale: 1}
	checkRoute(t, "greedy", g, []float32{1, 2, 3, 4}, []int32{3, 2}, []float64{math.Exp(4) / sum, math.Exp(3) / sum})

	// Group-limited: 2 groups of 2, keep 1 by its best probability.
	// logits [5, 0, 4, 4.5]: group 0's best is expert 0 (5) against group
	// 1's 4.5, so experts 0 and 1 are chosen although 3 and 2 score higher
	// than 1. With norm_topk_prob the two weights sum to 1, then ×2.
	g = &backend.RouteArgs{Experts: 4, TopK: 2, Groups: 2, TopKGroup: 1, NormTopK: true, Scale: 2}
	p0, p1 := math.Exp(5), math.Exp(0)
	checkRoute(t, "group limited", g, []float32{5, 0, 4, 4.5}, []int32{0, 1}, []float64{2 * p0 / (p0 + p1), 2 * p1 / (p0 + p1)})
}

// TestExpertLoad: tokens per expert, counted by hand.
func TestExpertLoad(t *testing.T) {
	n := ExpertLoad([]int32{0, 3, 3, 1, 0, 3}, 5)
	if n[0] != 2 || n[1] != 1 || n[2] != 0 || n[3] != 3 || n[4] != 0 {
		t.Errorf("load %v", n)
	}
}
