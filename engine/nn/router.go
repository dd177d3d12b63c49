package nn

import (
	"hsdb/engine/backend"
	"hsdb/engine/backend/moeref"
)

// Router is a DeepSeek MoE gate's selection rule (HF transformers 5.x
// DeepseekV3TopkRouter / DeepseekV3MoE.route_tokens_to_experts, DeepSeek-V2
// MoEGate; vLLM grouped_topk): sigmoid or softmax scores, the correction
// bias for the choice only, grouped top-k, renormalisation and
// routed_scaling_factor. The devices run it where the logits live
// (backend.MoE.Route); moeref.Route is its host reference and documents the
// arithmetic.
type Router struct {
	Experts, TopK     int       // n_routed_experts, num_experts_per_tok
	Groups, TopkGroup int       // n_group, topk_group (1, 1: no group limit)
	Sigmoid           bool      // scoring_func sigmoid (else softmax)
	NormTopK          bool      // norm_topk_prob
	Scale             float32   // routed_scaling_factor
	bias              []float32 // e_score_correction_bias [experts] of one layer (loaded by NewMoE), or nil
}

// args returns the rule as the backend's RouteArgs.
func (g *Router) args() *backend.RouteArgs {
	return &backend.RouteArgs{Experts: g.Experts, TopK: g.TopK, Groups: g.Groups, TopKGroup: g.TopkGroup,
		Sigmoid: g.Sigmoid, Bias: g.bias, NormTopK: g.NormTopK, Scale: g.Scale}
}

// Route returns, for logits [tokens·experts] (row-major), the chosen expert
// ids [tokens·topK] (best first) and their weights [tokens·topK], on the
// host (moeref.Route).
func (g *Router) Route(logits []float32, tokens int) (ids []int32, weights []float32) {
	return moeref.Route(g.args(), logits, tokens)
}
