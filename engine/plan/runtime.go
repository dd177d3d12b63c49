package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"hsdb/engine/model"
)

// layer is one decoder layer's parameters by their name inside the layer
// ("self_attn.q_proj.weight", "mlp.experts.7.gate_proj.weight").
type layer struct {
	index  int
	params map[string]model.Param
}

// layerParams groups the tree's parameters by decoder layer
// ("model.layers.N."), in layer order.
func layerParams(t *model.Tree) []layer {
	by := map[int]map[string]model.Param{}
	for _, p := range t.Params() {
		i, sub, ok := layerOf(p.Name)
		if !ok {
			continue
		}
		if by[i] == nil {
			by[i] = map[string]model.Param{}
		}
		by[i][sub] = p
	}
	out := make([]layer, 0, len(by))
	for i, ps := range by {
		out = append(out, layer{index: i, params: ps})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].index < out[b].index })
	return out
}

// layerOf splits a parameter name "model.layers.N.SUB" into N and SUB;
// false for a name outside the decoder layers.
func layerOf(name string) (int, string, bool) {
	rest, ok := strings.CutPrefix(name, "model.layers.")
	if !ok {
		return 0, "", false
	}
	idx, sub, ok := strings.Cut(rest, ".")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil {
		return 0, "", false
	}
	return i, sub, true
}

// rows returns rank r's rows of the layer's parameter sub (0 when absent).
func (l layer) rows(sub string, r int) int64 {
	p, ok := l.params[sub]
	if !ok {
		return 0
	}
	return int64(p.RankShape(r)[0])
}

// cols returns rank r's columns of the 2-D parameter sub (0 when absent).
func (l layer) cols(sub string, r int) int64 {
	p, ok := l.params[sub]
	if !ok || len(p.Shape) < 2 {
		return 0
	}
	return int64(p.RankShape(r)[1])
}

// mla reports whether the layer's attention is multi-head latent attention.
func (l layer) mla() bool {
	_, ok := l.params["self_attn.kv_b_proj.weight"]
	return ok
}

// kvConvention says what the KV cache holds per token and layer.
func kvConvention(layers []layer, d *model.Dims) string {
	if len(layers) == 0 {
		return ""
	}
	if layers[0].mla() {
		lat, rope := d.Named["kv_lora_rank"], d.Named["qk_rope_head_dim"]
		return fmt.Sprintf("MLA latent as vLLM caches it: kv_lora_rank + qk_rope_head_dim = %d values per token and layer, the same on every rank", lat+rope)
	}
	return "keys and values of the rank's kv heads, 2 × kv_heads × head_dim values per token and layer (vLLM's paged cache)"
}

// kvBytes is rank r's KV cache, in act bytes per value, once it holds
// seqs sequences of up to tokens tokens: what hsdb's engine allocates
// (model.KVCache), seqs × model.KVCapacity(tokens) rows per layer (a slot
// per sequence, each of 16 positions doubled until the longest fits; each
// prefill sizes the cache for its batch, model.KVCache.Place) of,
// for MLA, the latent [c_kv | k_pe], kv_lora_rank + qk_rope_head_dim
// values, not split over ranks (vLLM's MLACommonBackend cache; engine/nn
// mla_context.go); otherwise K and V of the rank's kv heads, kv_heads_r ×
// head_dim each (replicated kv heads counted on every rank that holds
// them).
func kvBytes(layers []layer, d *model.Dims, r int, seqs, tokens, act int64) (int64, error) {
	var rows counter
	rows.add(seqs, int64(model.KVCapacity(int(tokens))))
	n, err := rows.value("KV cache rows")
	if err != nil {
		return 0, err
	}
	var c counter
	for _, l := range layers {
		if l.mla() {
			c.add(n, int64(d.Named["kv_lora_rank"]+d.Named["qk_rope_head_dim"]), act)
			continue
		}
		c.add(n, 2, l.rows("self_attn.k_proj.weight", r), act)
	}
	// An overflow names its factors: which flag or config field to lower.
	return c.value(fmt.Sprintf("KV cache of %d sequences (--seqs) × %d rows (--seq-len %d) × %d layers", seqs, n/max(seqs, 1), tokens, len(layers)))
}

// AttentionScratch caps the attention scores and probabilities one chunk
// holds (the CUDA backend's attnScratch: longer runs are computed in
// chunks of queries).
const AttentionScratch = 512 << 20

// activationBytes is the peak, over the decoder layers, of the tensors one
// layer holds on rank r during a forward step of tokens tokens (T below),
// in act bytes per value unless noted. It follows hsdb's forward pass
// (engine/nn attention.go, mla.go, mlp.go, moe.go) and counts, for the
// stage of the layer that holds most:
//
//   - always: hidden_states and residual (the un-summed pair vLLM's layers
//     pass on) and the normed input, 3 × [T, hidden];
//   - GQA attention: q, k, v [T, rows of q/k/v_proj on the rank], the
//     rotated q and k, attn_out [T, heads_r × head_dim], o_proj's partial
//     sum and its all-reduce [T, hidden] × 2, and the scores and
//     probabilities of heads_r × L × L (f32 scores + act probabilities;
//     L = min(T, max_position_embeddings), the longest sequence a step
//     holds, as attention is computed per sequence), capped at
//     AttentionScratch;
//   - MLA: q_c and its norm [T, q_lora_rank] × 2, kv_a and its parts kv_c
//     and k_pe [T, kv_lora_rank + qk_rope_head_dim] × 2, c_kv [T,
//     kv_lora_rank], q [T, heads_r × qk_head_dim], kv_b [T, heads_r ×
//     (qk_nope + v_head_dim)], q_pe [T, heads_r × qk_rope], the rotated
//     k_pe [T, qk_rope], q rebuilt after the rope site [T, heads_r ×
//     qk_head_dim], the latent row written to the cache [T, kv_lora_rank +
//     qk_rope_head_dim], the context's expanded keys and values (the
//     longest context, T: [T, heads_r × qk_head_dim] and [T, heads_r ×
//     v_head_dim], engine/nn mla_context.go), attn_out [T, heads_r ×
//     v_head_dim], o_proj's partial sum and all-reduce, and the scores as
//     above. A later step of n tokens whose s sequences' contexts span C
//     rows holds no more when C ≤ T: its C − n cached rows cost the
//     gathered latent, its parts and kv_b's re-expansion, less per row
//     than a step token. C is s × the longest context (each sequence's
//     context starts at a multiple of the longest), so a decode of
//     sequences of unequal length can hold more than this;
//   - a dense MLP: gate and up [T, I_r] × 2, the product [T, I_r], down's
//     partial sum and all-reduce [T, hidden] × 2;
//   - routed experts (every token's top-k rows at once, as vLLM's fused_moe
//     holds them in its intermediate caches): router logits and scores
//     float32 [T, experts] × 2, the gathered rows [T·k, hidden], gate and
//     up [T·k, I_r] × 2 (I_r: the rank's share of moe_intermediate_size,
//     all of it under --ep), the product [T·k, I_r], the expert outputs
//     [T·k, hidden], the combined output and its all-reduce [T, hidden] ×
//     2, and a shared expert like a dense MLP of its size;
//   - weights kept quantized (the CUDA backend; scratch, from newWeights:
//     nil or empty when they are dequantized on load), on top of the
//     stage's peak: the largest quantized linear outside the routed
//     experts widened into the activation dtype (rows × cols), and, when
//     the routed experts are kept quantized, the MoE input's permuted copy
//     [T, hidden] in bf16 (2 bytes). With W8A8 (Options.W8A8) a linear
//     quantizes its input instead, [T, in] fp8 and [T, in/128] f32
//     scales, and cuBLASLt takes a workspace of at most W8A8Workspace:
//     the larger of the two forms is counted (a linear cuBLASLt cannot
//     take still widens).
func activationBytes(layers []layer, d *model.Dims, r int, tokens, act int64, scratch map[int]widening, w8a8 bool) (int64, error) {
	H := int64(d.Hidden)
	var peak int64
	for _, l := range layers {
		attn, err := attentionStage(l, d, r, tokens, act)
		if err != nil {
			return 0, err
		}
		mlp, err := mlpStage(l, d, r, tokens, act)
		if err != nil {
			return 0, err
		}
		var c counter
		c.add(3, tokens, H, act)
		c.add(max(attn, mlp))
		if s := scratch[l.index]; s.linear > 0 || s.experts {
			var wq counter
			if w8a8 {
				wq.add(tokens, s.in)
				wq.add(tokens, (s.in+127)/128, 4)
				wq.add(W8A8Workspace)
			}
			wv, err := wq.value(fmt.Sprintf("layer %d W8A8 scratch", l.index))
			if err != nil {
				return 0, err
			}
			var wd counter
			wd.add(s.linear, act)
			dv, err := wd.value(fmt.Sprintf("layer %d widening scratch", l.index))
			if err != nil {
				return 0, err
			}
			c.add(max(wv, dv))
			if s.experts {
				c.add(tokens, H, 2)
			}
		}
		v, err := c.value(fmt.Sprintf("layer %d activations", l.index))
		if err != nil {
			return 0, err
		}
		peak = max(peak, v)
	}
	return peak, nil
}

// W8A8Workspace is the most workspace the CUDA backend lets cuBLASLt's
// block-scaled fp8 GEMM take (engine/backend/cuda/driver's
// ltMaxWorkspace): 32 MiB.
const W8A8Workspace = 32 << 20

// attentionStage counts the attention's tensors (activationBytes).
func attentionStage(l layer, d *model.Dims, r int, T, act int64) (int64, error) {
	H, hd := int64(d.Hidden), int64(max(d.HeadDim, 1))
	var c counter
	var heads int64
	if l.mla() {
		qa := l.rows("self_attn.q_a_proj.weight", r)
		q := l.rows("self_attn.q_b_proj.weight", r) + l.rows("self_attn.q_proj.weight", r)
		heads = q / hd
		rope := int64(d.Named["qk_rope_head_dim"])
		kva, o := l.rows("self_attn.kv_a_proj_with_mqa.weight", r), l.cols("self_attn.o_proj.weight", r)
		for _, w := range []int64{qa, qa, kva, kva, int64(d.Named["kv_lora_rank"]), q, l.rows("self_attn.kv_b_proj.weight", r),
			heads * rope, rope, q, kva, q, o, o, H, H} {
			c.add(T, w, act)
		}
	} else {
		q, k, v := l.rows("self_attn.q_proj.weight", r), l.rows("self_attn.k_proj.weight", r), l.rows("self_attn.v_proj.weight", r)
		heads = q / hd
		for _, w := range []int64{q, k, v, q, k, l.cols("self_attn.o_proj.weight", r), H, H} {
			c.add(T, w, act)
		}
	}
	// Scores are held per sequence (the CUDA backend attends run by run;
	// the CPU one a key row at a time), and no sequence is longer than
	// max_position_embeddings: a step of more tokens packs several.
	L := T
	if d.MaxPos > 0 {
		L = min(T, int64(d.MaxPos))
	}
	if scores, ok := mul(heads, L, L, 4+act); !ok || scores > AttentionScratch {
		c.add(AttentionScratch)
	} else {
		c.add(scores)
	}
	return c.value(fmt.Sprintf("layer %d attention activations", l.index))
}

// mlpStage counts the MLP's or MoE block's tensors (activationBytes).
func mlpStage(l layer, d *model.Dims, r int, T, act int64) (int64, error) {
	H := int64(d.Hidden)
	var c counter
	if i := l.rows("mlp.gate_proj.weight", r); i > 0 {
		c.add(3, T, i, act)
		c.add(2, T, H, act)
	}
	var experts, inter int64
	for sub := range l.params {
		if strings.HasPrefix(sub, "mlp.experts.") && strings.HasSuffix(sub, ".gate_proj.weight") {
			experts++
			inter = max(inter, l.rows(sub, r))
		}
	}
	if experts > 0 {
		k := int64(max(d.Named["num_experts_per_tok"], 1))
		c.add(2, T, experts, 4)
		c.add(2, T, k, H, act)
		c.add(3, T, k, inter, act)
		c.add(2, T, H, act)
		if s := l.rows("mlp.shared_experts.gate_proj.weight", r); s > 0 {
			c.add(3, T, s, act)
			c.add(T, H, act)
		}
	}
	return c.value(fmt.Sprintf("layer %d MLP activations", l.index))
}
