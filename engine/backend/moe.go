package backend

// RouteArgs is a DeepSeek MoE gate's selection rule (HF transformers 5.x
// DeepseekV3TopkRouter and DeepseekV3MoE.route_tokens_to_experts, DeepSeek-V2
// MoEGate; vLLM grouped_topk): see moeref.Router, the host reference every
// backend's Route matches, for the exact arithmetic.
type RouteArgs struct {
	Experts, TopK     int // n_routed_experts, num_experts_per_tok
	Groups, TopKGroup int // n_group, topk_group (Groups <= 1: no group limit)
	// Sigmoid selects scoring_func "sigmoid" (DeepSeek-V3, Kimi-K2); false
	// is "softmax" (DeepSeek-V2).
	Sigmoid bool
	// Bias is e_score_correction_bias [Experts] (added for the choice
	// only), or nil.
	Bias     []float32
	NormTopK bool    // norm_topk_prob
	Scale    float32 // routed_scaling_factor
}

// MoE are the ops of a mixture-of-experts block that run where the data
// lives (vLLM's FusedMoE: grouped_topk, then fused_moe over stacked expert
// weights), so a MoE layer on a GPU needs no host round trip for its
// routing. Part of Device.
type MoE interface {
	// Route selects experts for logits [tokens, experts] (float32, the
	// gate's output computed in float32 as HF does) by a's rule. It
	// returns ids [tokens, top_k] I32 (best first) and weights [tokens,
	// top_k] F32, both scoped activations; the ids equal moeref.Router's
	// exactly.
	Route(logits Tensor, a *RouteArgs) (ids, weights Tensor)
	// Experts makes the expert set of one MoE layer's routed experts
	// [first, first+len(gate)) on this rank: gate[i] and up[i] [inter,
	// hidden] (gate_proj, up_proj), down[i] [hidden, inter] (down_proj),
	// all of one shape and dtype. The device takes the tensors over (they
	// must not be used or freed afterwards; it may restack them, as vLLM
	// stacks w13 and w2). The result is a persistent handle whose Shape is
	// [experts, inter, hidden] and which only RoutedExperts accepts.
	Experts(first int, gate, up, down []Tensor) Tensor
	// RoutedExperts computes the routed experts' weighted sum for x
	// [tokens, hidden] (ActDType), ids and weights [tokens, top_k] from
	// Route: out[t] = Σ_j weights[t, j] · down_e(silu(gate_e·x[t]) ·
	// up_e·x[t]) over the slots j whose expert e = ids[t, j] is in the set
	// (a rank's experts under expert parallelism; the other slots add
	// nothing). Out: [tokens, hidden] in ActDType, a scoped activation.
	RoutedExperts(x, ids, weights, experts Tensor) Tensor
}
