package client

import (
	"fmt"
	"strconv"
	"strings"
)

// ModelInfo is `info model`: where the model came from, its architecture
// and sizes (config.json names), parameter count, the config's dtype, the
// weights' stored and kept dtypes (with fp8 dequantization and unused
// checkpoint tensors), the activation dtype, world size and device memory
// per rank in bytes.
type ModelInfo struct {
	Path      string `json:"path"`
	Arch      string `json:"arch"`
	ModelType string `json:"model_type"`
	Hidden    int    `json:"hidden_size"`
	Layers    int    `json:"num_hidden_layers"`
	// Loaded are the decoder layers this session holds (Partial with
	// --layers A-B).
	Loaded  LayerSpan `json:"loaded_layers"`
	Heads   int       `json:"num_attention_heads"`
	KVHeads int       `json:"num_key_value_heads"`
	HeadDim int       `json:"head_dim"`
	// MLA are multi-head latent attention's sizes (DeepSeek, Kimi), nil
	// for other attention; HeadDim is then qk_head_dim = QKNope + QKRope,
	// not config.json's head_dim (HF's DeepseekV3Config sets that to
	// qk_rope_head_dim).
	MLA *MLAInfo `json:"mla,omitempty"`
	// MoE are the routed experts' sizes (DeepSeek, Kimi), nil for a
	// model without routed experts.
	MoE          *MoEInfo `json:"moe,omitempty"`
	Intermediate int      `json:"intermediate_size"`
	Vocab        int      `json:"vocab_size"`
	MaxPos       int      `json:"max_position_embeddings"`
	Tied         bool     `json:"tie_word_embeddings"`
	// DType is config.json's torch_dtype; Weights what the checkpoint and
	// the ranks hold.
	DType    string       `json:"dtype"`
	Weights  WeightDTypes `json:"weights"`
	ActDType string       `json:"activation_dtype"`
	Params   int64        `json:"params"`
	World    int          `json:"world_size"`
	// ExpertParallel says the routed experts are placed whole per rank
	// (--ep, vLLM's expert parallelism) rather than split per expert.
	ExpertParallel bool `json:"expert_parallel"`
	// W8A8 says the fp8 linears run on fp8 activations (--w8a8).
	W8A8    bool     `json:"w8a8,omitempty"`
	Devices []string `json:"devices"`
	// DeviceWhy says how the device was chosen (--device given or
	// defaulted, in process or one worker process per rank, and why).
	DeviceWhy string `json:"device_why,omitempty"`
	// Tokenizer names the tokenizer `input text` encodes with, kind and
	// file ("llama2c:tok512.bin", "hf:tokenizer.json"), or "none: " and
	// why (the files looked for, a vocabulary larger than the model's).
	Tokenizer string `json:"tokenizer"`
	// TextBOS is the id `input text` (and capture's text rows, generate
	// --prompt) puts before a text, as the tokenizer's reference does
	// (tokenizer.TextBOS); -1 for none (Kimi's tiktoken.model); nil
	// without a tokenizer.
	TextBOS *int32 `json:"text_bos,omitempty"`
	// TextEOS is the id `input text` (and capture's text rows, generate
	// --prompt) puts after a text, as the tokenizer's reference does
	// (tokenizer.TextEOS: HF's add_eos_token or a post_processor template
	// ending in a special token); -1 for none (llama2.c's run.c, Kimi's
	// tiktoken.model); nil without a tokenizer.
	TextEOS *int32  `json:"text_eos,omitempty"`
	Memory  []int64 `json:"memory_bytes"`
	Skipped string  `json:"skipped,omitempty"`
}

// MLAInfo are the sizes of multi-head latent attention, named as in
// DeepSeek-V3's config.json: per head, q and k are [qk_nope | qk_rope]
// (QKNope + QKRope values) and v is VHead values; the cached latent is
// KVLoraRank values (plus the shared rope key), and q goes through a
// QLoraRank latent (0: a plain q_proj).
type MLAInfo struct {
	KVLoraRank int `json:"kv_lora_rank"`
	QLoraRank  int `json:"q_lora_rank"`
	QKNope     int `json:"qk_nope_head_dim"`
	QKRope     int `json:"qk_rope_head_dim"`
	VHead      int `json:"v_head_dim"`
}

// MoEInfo are a mixture-of-experts model's sizes, named as in
// DeepSeek-V3's config.json: RoutedExperts experts of Intermediate
// columns each (moe_intermediate_size), TopK of them chosen per token
// (num_experts_per_tok), shared experts SharedIntermediate columns wide
// in all (moe_intermediate_size × n_shared_experts; 0: none), in the
// loaded decoder layers Layers (from first_k_dense_replace on; the others
// have a dense MLP of intermediate_size).
type MoEInfo struct {
	RoutedExperts      int   `json:"n_routed_experts"`
	TopK               int   `json:"num_experts_per_tok"`
	Intermediate       int   `json:"moe_intermediate_size"`
	SharedIntermediate int   `json:"shared_intermediate_size"`
	Layers             []int `json:"moe_layers"`
}

// LayerInfo is one row of `info layers`: a decoder layer's site, class,
// parameter count and its sub-module sites.
type LayerInfo struct {
	Layer   int      `json:"layer"`
	Site    string   `json:"site"`
	Class   string   `json:"class"`
	Params  int64    `json:"params"`
	Modules []string `json:"modules"`
}

// MemoryInfo is one row of `info memory`: a rank's device bytes in use
// (weights, KV cache and live activations) and of its KV cache.
type MemoryInfo struct {
	Rank    int   `json:"rank"`
	InUse   int64 `json:"in_use_bytes"`
	KVCache int64 `json:"kv_cache_bytes"`
	// Device names the rank's device, or with --pp each stage's device and
	// its layers (the bytes are then summed over them).
	Device string `json:"device"`
}

// SiteInfo is one row of `info sites`: a site in visit order with its
// depth, class and the tensors it shows.
type SiteInfo struct {
	Index   int      `json:"index"`
	Site    string   `json:"site"`
	Class   string   `json:"class"`
	Depth   int      `json:"depth"`
	Tensors []string `json:"tensors"`
}

// TreeNode is one module of `tree`: depth below the shown root, name, path,
// class, parameter count (with descendants), and its own weights.
type TreeNode struct {
	Depth   int          `json:"depth"`
	Name    string       `json:"name"`
	Path    string       `json:"path"`
	Class   string       `json:"class"`
	Params  int64        `json:"params"`
	Weights []WeightInfo `json:"weights,omitempty"`
}

// WeightInfo is a weight with its full shape, how it is split (Dim -1:
// replicated) and the shape each rank holds.
type WeightInfo struct {
	Name       string  `json:"name"`
	Shape      []int   `json:"shape"`
	Dim        int     `json:"split_dim"`
	RankShapes [][]int `json:"rank_shapes"`
}

// DTypeCount is how many of the model's weight tensors have one dtype.
type DTypeCount struct {
	DType   string `json:"dtype"`
	Tensors int    `json:"tensors"`
}

// WeightDTypes is what `info model` says of the weights' dtypes: how the
// checkpoint stores the model's weight tensors (Stored, most common first;
// headers read again from the checkpoint), the dtype the ranks keep them
// in (Kept: --dtype when given, else as stored with fp8 and f64 as f32, as
// model.Loader converts them), how many fp8 tensors were dequantized on
// load (their names: Client.FP8Tensors), and the checkpoint tensors the
// model does not use (engine.LoadReport.Unused). Err says why Stored is
// empty (a checkpoint that could not be read again).
type WeightDTypes struct {
	Stored      []DTypeCount `json:"stored"`
	Kept        []DTypeCount `json:"kept"`
	Converted   string       `json:"converted_by,omitempty"` // "--dtype bf16" when the load converted
	Dequantized int          `json:"fp8_dequantized"`
	// QuantFormat is the scheme the Dequantized tensors were read through
	// (QuantScheme.String: "fp8 e4m3, 128×128 blocks", "compressed-tensors
	// pack-quantized int4 symmetric, group 32 (W4A16)"); empty for none.
	// Packed says whether the ranks keep them quantized (the CUDA backend's
	// int4) rather than dequantized.
	QuantFormat string   `json:"quant_format,omitempty"`
	Packed      bool     `json:"quant_packed,omitempty"`
	Unused      []string `json:"unused_tensors"`
	Err         string   `json:"error,omitempty"`
}

// QuantTensor is a linear weight the checkpoint stores quantized: its HF
// name and its storage format (tensor.QuantFormat.String): "fp8_block"
// (DeepSeek-V3's e4m3 with block scales) or "int4_group"
// (compressed-tensors pack-quantized int4 with group scales); Scheme is the
// quantization scheme that read it (WeightDTypes.QuantFormat).
type QuantTensor struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	Scheme string `json:"scheme"`
}

// LayerSpan is the decoder layers a session's engine loaded: First..Last
// (0-based, inclusive) of the model's Total (num_hidden_layers). Partial
// is true when that is not every layer: the engine was opened with
// --layers A-B (engine.Options.Layers), and its module tree holds only
// these layers, under their own numbers (model.layers.A, ...).
type LayerSpan struct {
	First   int  `json:"first"`
	Last    int  `json:"last"`
	Total   int  `json:"total"`
	Partial bool `json:"partial"`
}

// String says what is loaded: "layers 2-3 of 0-3 (--load-layers 2-3)", or
// "layers 0-3" for all of them.
func (sp LayerSpan) String() string {
	if sp.First < 0 {
		return fmt.Sprintf("no decoder layers of %d", sp.Total)
	}
	if !sp.Partial {
		return fmt.Sprintf("layers 0-%d", sp.Last)
	}
	return fmt.Sprintf("layers %d-%d of 0-%d (--load-layers %d-%d)", sp.First, sp.Last, sp.Total-1, sp.First, sp.Last)
}

// PartialNote explains what a partial load means for a run ("" for a full
// load): layer First receives the embeddings directly, as layer 0 would,
// so nothing from it on is the full model's forward pass.
func (sp LayerSpan) PartialNote() string {
	if !sp.Partial || sp.First < 0 {
		return ""
	}
	s := fmt.Sprintf("only decoder layers %d-%d of 0-%d are loaded (--load-layers %d-%d)", sp.First, sp.Last, sp.Total-1, sp.First, sp.Last)
	if sp.First > 0 {
		s += fmt.Sprintf(": the embeddings feed layer %d directly, so its input, the hidden states after it and the logits differ from the full model's", sp.First)
	} else {
		s += ": the final norm and lm_head read layer " + fmt.Sprint(sp.Last) + "'s output, so the logits differ from the full model's"
	}
	return s
}

// RankInfo is one rank of `info ranks`: its device and activation dtype,
// and the slices of the split weights it holds (the TP plan, read from the
// module tree's model.Param ranges): Shards are those outside the decoder
// layers (embeddings, lm_head), Layers those of the decoder layers, one
// entry per run of layers split alike.
type RankInfo struct {
	Rank     int          `json:"rank"`
	Device   string       `json:"device"`
	ActDType string       `json:"activation_dtype"`
	Shards   []ShardInfo  `json:"shards"`
	Layers   []LayerShard `json:"layers"`
	// Workers are the rank's worker processes (one per pipeline stage)
	// when the ranks run in workers (--workers, --listen); empty in
	// process.
	Workers []WorkerInfo `json:"workers,omitempty"`
}

// WorkerInfo is one rank worker process as the front knows it, read
// without waiting on the worker (engine.WorkerState): its pipeline stage,
// process id and host, State ("idle", "running", "at a stop", "stopped by
// a signal", "failed"), the site it is at or last asked about, and for a
// failed one its fault report.
type WorkerInfo struct {
	Stage  int    `json:"stage"`
	PID    int    `json:"pid"`
	Host   string `json:"host"`
	State  string `json:"state"`
	Site   string `json:"site,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ShardInfo is a split weight on one rank: its name (without "model."; in
// a LayerShard relative to the layer, "self_attn.o_proj.weight"), the
// dimension split, and the rank's rows or columns [Lo, Hi) of the Full
// ones the tensor has. Padded is the rank's range in the padded split
// when it runs past the tensor (vLLM pads the vocabulary to a multiple of
// 64 before splitting it: VocabParallelEmbedding); Lo == Hi then means the
// rank holds padding only.
type ShardInfo struct {
	Name   string  `json:"name"`
	Dim    int     `json:"dim"`
	Lo     int     `json:"lo"`
	Hi     int     `json:"hi"`
	Full   int     `json:"full"`
	Padded *[2]int `json:"padded,omitempty"`
}

// String renders "embed_tokens.weight dim 0 [64:101] of 101 (padded
// [64:128])".
func (si ShardInfo) String() string {
	s := fmt.Sprintf("%s dim %d [%d:%d] of %d", si.Name, si.Dim, si.Lo, si.Hi, si.Full)
	if si.Padded != nil {
		s += fmt.Sprintf(" (padded [%d:%d])", si.Padded[0], si.Padded[1])
		if si.Lo == si.Hi {
			s += ": padding only"
		}
	}
	return s
}

// LayerShard is what one rank holds of decoder layers First..Last, which
// are all split alike: the split weights of one of them (names relative to
// the layer) and, for a mixture-of-experts layer, where its routed experts
// are.
type LayerShard struct {
	First   int          `json:"first"`
	Last    int          `json:"last"`
	Shards  []ShardInfo  `json:"shards"`
	Experts []ExpertInfo `json:"experts,omitempty"`
}

// ExpertInfo is how the routed experts of one MoE block ("mlp.experts")
// sit on a rank: the experts of Total it computes (IDs, ascending), and
// whether it holds them whole (expert parallel, vLLM's
// --enable-expert-parallel: each rank a block of experts) or only rows
// [Rows[0], Rows[1]) of each expert's Inter intermediate rows
// (tensor-parallel experts, vLLM's default). No IDs: the rank holds no
// expert.
type ExpertInfo struct {
	Module string `json:"module"`
	Total  int    `json:"total"`
	IDs    []int  `json:"experts"`
	Whole  bool   `json:"whole"`
	Rows   [2]int `json:"rows"`
	Inter  int    `json:"intermediate"`
}

// String renders "mlp.experts: experts 0-3 of 8, whole (expert parallel)"
// or "mlp.experts: all 8 experts, rows [0:18] of 36 of each (tensor
// parallel)".
func (x ExpertInfo) String() string {
	all := len(x.IDs) == x.Total
	what := fmt.Sprintf("experts %s of %d", IntRuns(x.IDs), x.Total)
	if all {
		what = fmt.Sprintf("all %d experts", x.Total)
	}
	switch {
	case len(x.IDs) == 0:
		return fmt.Sprintf("%s: no expert of %d", x.Module, x.Total)
	case x.Whole && !all:
		return fmt.Sprintf("%s: %s, whole (expert parallel)", x.Module, what)
	case x.Whole:
		return fmt.Sprintf("%s: %s, whole", x.Module, what)
	}
	return fmt.Sprintf("%s: %s, rows [%d:%d] of %d of each (tensor parallel)", x.Module, what, x.Rows[0], x.Rows[1], x.Inter)
}

// IntRuns renders ascending ints (expert ids, layer or weight indices)
// with runs of consecutive values collapsed, comma-separated: [0 1 2 3]
// is "0-3", [0 2 5 6 7] "0,2,5-7", nil "".
func IntRuns(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
