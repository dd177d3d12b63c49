package client

// Fault is one injected fault (`inject`): kind, site prefix ("" every
// site it acts on), rank (-1 every rank), a kind's value, and a position
// (Token, Channel). Field for field engine/model's Fault, which the
// debugger converts it to.
type Fault struct {
	Kind    string  `json:"kind"`
	Site    string  `json:"site,omitempty"`
	Rank    int     `json:"rank"`
	Value   float64 `json:"value,omitempty"`
	Token   int     `json:"token,omitempty"`
	Channel int     `json:"channel,omitempty"`
}

// FaultKind documents one fault `inject` rehearses: its kind, the vLLM
// classes of the sites it acts on (none for faults on what is recorded),
// whether it acts on the recording rather than the computation, what it
// does and the public report of the bug it imitates.
type FaultKind struct {
	Kind     string   `json:"kind"`
	Classes  []string `json:"classes,omitempty"`
	Recorded bool     `json:"recorded"`
	Does     string   `json:"does"`
	Imitates string   `json:"imitates"`
}

// FaultKinds is every fault `inject` rehearses: the kind (engine/model's
// Fault* for the computation, inspect/capture's for what is recorded), the
// vLLM classes of the sites it acts on, what it does and the public report
// of the bug it imitates. `help inject` is generated from it.
var FaultKinds = []FaultKind{
	{Kind: "skip-allreduce", Classes: []string{"RowParallelLinear", "DeepseekV2MoE", "DeepseekV3MoE"},
		Does:     "a RowParallelLinear (o_proj, down_proj) or a MoE block (DeepseekV2MoE/DeepseekV3MoE at layers.N.mlp, which all-reduces its routed and shared experts' partial sums once) passes its rank's partial sum on without the all-reduce; ranks diverge (tp > 1)",
		Imitates: "a RowParallelLinear built with reduce_results=False and no all-reduce after it, or a custom all-reduce that silently did nothing"},
	{Kind: "vocab-padding", Classes: []string{"VocabParallelEmbedding"},
		Does:     "the vocab-parallel embedding looks tokens up at unpadded rank offsets although its rows are split by the vocabulary padded to 64 (tp > 1)",
		Imitates: "a re-implemented vocab-parallel split that ignores vLLM's padding of the vocabulary to a multiple of 64"},
	{Kind: "router-softmax", Classes: []string{"GateLinear"},
		Does:     "the MoE router scores experts with softmax instead of sigmoid (scoring_func ignored)",
		Imitates: "TRT-Model-Connect #662 (routing that departs at the first MoE layer)"},
	{Kind: "router-no-bias", Classes: []string{"GateLinear"},
		Does:     "the MoE router chooses experts without e_score_correction_bias",
		Imitates: "TRT-Model-Connect #662 (routing that departs at the first MoE layer)"},
	{Kind: "perturb-rank",
		Does:     "one rank's replicated copy of a decoder layer's hidden_states is scaled by 1 + VALUE (1e-2); --rank picks it (default the last)",
		Imitates: "a rank that diverged: nondeterministic kernels or a stale buffer on one GPU (replicas that should be equal)"},
	{Kind: "chunk-no-context",
		Does:     "attention computes every token from --token K on as if the sequence began at K: a chunked prefill whose second chunk ran without the first chunk's KV cache (positions continue)",
		Imitates: "vLLM #52909, PR #43805 (chunked prefill without context)"},
	{Kind: "no-residual", Recorded: true,
		Does:     "layer captures record vLLM's hidden_states half (the MLP output) without the residual",
		Imitates: "a hook on vLLM's decoder layer that keeps the first of its (hidden_states, residual) outputs"},
	{Kind: "scale-residual", Recorded: true,
		Does:     "layer captures are scaled by VALUE (default 1/routed_scaling_factor, else 0.5)",
		Imitates: "vLLM's fp16 DeepSeek path dividing the residual by routed_scaling_factor (vLLM #13232, #14809)"},
	{Kind: "shift-rows", Recorded: true,
		Does:     "layer captures are written with each sequence's rows shifted by VALUE tokens (default 1; |VALUE| below every sequence's length)",
		Imitates: "rows and ids cut at different offsets (speculators #279, PR #365; EAGLE #317)"},
	{Kind: "keep-shard", Recorded: true,
		Does:     "layer captures keep rank --rank R's column shard [len, hidden/tp] instead of the gathered tensor (tp > 1)",
		Imitates: "a hook on one tensor-parallel rank saving what that rank holds, never all-gathered"},
	{Kind: "gather-rows", Recorded: true,
		Does:     "layer captures hold the ranks' column shards concatenated along rows [tp·len, hidden/tp]: an all-gather on the wrong dimension (tp > 1)",
		Imitates: "torch.cat of gathered shards on dim 0 instead of -1"},
	{Kind: "nan-at", Recorded: true,
		Does:     "layer captures get a NaN at --token T, --channel C of each sequence (T below every sequence's length, C below hidden_size)",
		Imitates: "an overflow or uninitialized memory written out (NaN in saved hidden states)"},
}
