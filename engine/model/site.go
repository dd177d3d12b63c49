package model

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Site is a named point of the forward pass: one module of the model, visited
// when the module returns. Paths are vLLM module paths, which are HF's except
// where vLLM fuses modules (self_attn.qkv_proj for q_proj/k_proj/v_proj,
// mlp.gate_up_proj for gate_proj/up_proj): "model.embed_tokens",
// "model.layers.3.self_attn.o_proj", "model.layers.3" (the decoder layer's
// output), "model.norm", "lm_head". Class is the vLLM class name of the
// module ("LlamaDecoderLayer", "QKVParallelLinear").
type Site struct {
	Path   string
	Class  string
	Depth  int   // 1 for children of the root (model, lm_head), +1 per level
	Layer  int   // decoder layer index, or -1 outside decoder layers
	Index  int   // position in the order sites are visited within one step
	Parent *Site // enclosing module's site; nil for depth 1
	// Tensors names what the site shows, in order (see SiteTensor.Name).
	Tensors []string
}

// String returns the site's path.
func (s *Site) String() string { return s.Path }

// ShardKind says how a tensor at a site relates to the full tensor.
type ShardKind uint8

const (
	// Replicated: every rank holds the whole tensor; ranks must agree.
	Replicated ShardKind = iota
	// Sharded: the rank holds columns [Start, End) of the full tensor's
	// last dimension (column-parallel outputs, attention heads, vocab
	// shards). Ranges of different ranks may coincide when kv heads are
	// replicated (num_key_value_heads < world size).
	Sharded
	// Partial: the rank holds an addend; the full tensor is the sum over
	// ranks (a row-parallel linear's output before its all-reduce).
	Partial
)

// Sharding labels a site tensor: Replicated, Sharded over columns
// [Start, End) of Full, or Partial (sum over ranks).
type Sharding struct {
	Kind       ShardKind
	Start, End int // Sharded: this rank's column range in the full tensor
	Full       int // Sharded: the full tensor's column count
}

// String renders the label as the REPL prints it: "replicated",
// "sharded(dim=1, 48:96 of 96)", "partial(sum)".
func (s Sharding) String() string {
	switch s.Kind {
	case Sharded:
		return fmt.Sprintf("sharded(dim=-1, %d:%d of %d)", s.Start, s.End, s.Full)
	case Partial:
		return "partial(sum)"
	}
	return "replicated"
}

// SiteTensor is one tensor a site shows on one rank: [tokens, features] for
// per-token tensors, in the device's activation dtype. Small data computed
// on the host (a router's top-k expert ids [tokens, k] as I64, tokens per
// expert) is given as Host instead of T.
type SiteTensor struct {
	Name  string
	T     backend.Tensor
	Host  *tensor.Tensor
	Shard Sharding
	// Writable: the pass reads T after the site, so writing into it at the
	// stop (the debugger's `set var`, `patch`) changes what follows. False
	// for what was consumed before the site (a module's input, a partial
	// sum already all-reduced) and for copies made only for the site.
	Writable bool
	// SumOf, when set, names the writable tensors of the same site whose
	// sum this derived one is: a decoder layer's stream = hidden_states +
	// residual is computed for the site only. An edit of it writes the new
	// value into the first and zeros the others, so that the sum the pass
	// computes next (vLLM's fused add of the pair) is exactly the edited
	// value.
	SumOf []string
	// Attn, on an attention site's query tensor, says how its rows attend
	// to the keys (for the debugger's attention probabilities).
	Attn *AttnGeometry
}

// AttnGeometry describes one rank's causal attention at a site whose query
// tensor carries it: query Q [tokens, Heads·DK] of global heads
// FirstHead.., key tensor Key [tokens, KVHeads·DK] of global kv heads
// FirstKVHead.. (query head h uses kv head h / (TotalHeads/TotalKVHeads), HF
// repeat_kv), softmax(q·kᵀ·Scale) over the keys of the token's own sequence
// at positions <= its own (the last Window of them when Window > 0). For
// DeepSeek's MLA DK is qk_nope + qk_rope (the rope part included) and Scale
// carries YaRN's mscale².
type AttnGeometry struct {
	Key                      string
	Heads, KVHeads, DK       int
	FirstHead, FirstKVHead   int
	TotalHeads, TotalKVHeads int
	Scale                    float32
	Window                   int
}

// Shape returns the tensor's shape whichever side it lives on.
func (s SiteTensor) Shape() []int {
	if s.T != nil {
		return s.T.Shape()
	}
	return s.Host.Shape
}

// Frame is one level of the call chain at a stop: a module that has been
// entered and not yet returned, with the shapes of its inputs on this rank.
type Frame struct {
	Site   *Site   // the module entered
	Inputs [][]int // the shape of each input on this rank
	// In are the inputs themselves (replicated in every block of
	// engine/nn), valid only during Hook.Visit.
	In []backend.Tensor
}

// Event identifies one visit of a site: which site, in which step (0 is the
// prefill of the batch, k the k-th decode step) and for which token batch.
type Event struct {
	Site  *Site  // the site visited
	Step  int    // 0: the prefill; k: the k-th decode step
	Batch *Batch // the step's token batch (sequences, positions)
}

// RankView is what one rank shows at a site: its tensors and its call chain
// (outermost first, ending with the site's own frame). Tensors are valid only
// during Hook.Visit.
type RankView struct {
	Rank    int            // the rank's index, 0 .. World-1
	World   int            // the tensor-parallel world size
	Device  backend.Device // the rank's device, which holds Tensors
	Tensors []SiteTensor   // what the site shows on this rank
	Frames  []Frame        // the call chain, outermost first
}

// Tensor returns the named tensor, or ok=false.
func (v *RankView) Tensor(name string) (SiteTensor, bool) {
	for _, t := range v.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return SiteTensor{}, false
}

// Hook observes a forward pass, in two phases as llama.cpp's eval callback:
// Want is asked at every site, on every rank, and must be cheap and return the
// same answer on every rank (it may read state that changes only while the
// pass is stopped in Visit); a site nobody wants costs nothing more. When
// Want returns true the ranks meet, and Visit is called once with every
// rank's view; the pass continues when Visit returns. A Visit that returns an
// error stops the pass on all ranks, and the forward call returns that error.
type Hook interface {
	Want(ev *Event) bool
	Visit(ev *Event, ranks []*RankView) error
}
