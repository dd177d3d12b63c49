package plan

import (
	"fmt"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// weights is the weight part of a plan.
type weights struct {
	bytes, quant []int64      // per rank: all weights, the quantized part
	dense        tensor.DType // dtype dense weights are counted at without a checkpoint
	dequant      tensor.DType // dtype quantized weights become when dequantized
	found        bool         // the checkpoint's headers gave at least one parameter's dtype
	// counted is, per dtype, the dense values rank 0 counts at it (the
	// plan's Dense: the dtype most of them are counted at).
	counted map[tensor.DType]int64
	// scratch is, per rank and decoder layer, what the CUDA backend widens
	// kept-quantized weights into during a step (widening).
	scratch []map[int]widening
}

// widening is what one decoder layer's kept-quantized weights cost a rank
// beyond themselves during a step on the CUDA backend.
type widening struct {
	// linear is the largest quantized linear outside the routed experts,
	// as [rows, cols] values: Linear widens the whole weight into a
	// scratch of the activation dtype before its cuBLAS GEMM
	// (engine/backend/cuda linearFP8 and linearInt4; the int4 GEMV for at
	// most 4 tokens needs none, counted anyway).
	linear int64
	// in is the largest input width (cols) of those linears: with W8A8
	// (Options.W8A8) Linear quantizes its [tokens, in] input to fp8 instead.
	in int64
	// experts says the layer's routed experts are kept quantized: the
	// grouped kernels read the MoE input through a copy with its columns
	// permuted ([tokens, hidden] bf16, PermuteK).
	experts bool
}

// newWeights counts every parameter of t on every rank: rank r's share is
// Param.RankShape(r) (a rank without a share, an expert placed on another
// rank under --ep, counts nothing). A linear layer's 2-D weight
// (linearClasses) that the quantization scheme stores quantized counts
// Quant.Planned(name, rows, cols) of the rank's shard (data plus scales;
// with a checkpoint, only weights the checkpoint stores quantized,
// Quant.Stored), or with o.Dequantize its elements at --dtype or float32,
// as does a shard that does not fall on the scheme's whole blocks
// (Quant.Layout, tensor.ShardOnBlocks: Qwen3-4B-FP8's 9728 intermediate
// rows over --tp 8 are 9.5 blocks of 128 a rank), which model.Loader.Linear
// dequantizes before slicing and keeps dense. Int4 scales the checkpoint
// stores in a dtype other than bf16 count 4 bytes each, as the CUDA
// backend widens them to float32 (Planned counts bf16's 2; from config.json
// alone bf16 is assumed, as Kimi-K2's checkpoints store them);
// every other parameter counts its elements × the dtype it is kept in
// (denseDType).
func newWeights(t *model.Tree, d *model.Dims, o Options, world int) (*weights, error) {
	if err := checkCheckpoint(t, o, world); err != nil {
		return nil, err
	}
	w := &weights{bytes: make([]int64, world), quant: make([]int64, world), scratch: make([]map[int]widening, world), counted: map[tensor.DType]int64{}}
	for r := range world {
		w.scratch[r] = map[int]widening{}
	}
	w.dense = o.DType
	if w.dense == tensor.Invalid {
		w.dense = d.DType
	}
	if w.dense == tensor.Invalid {
		w.dense = tensor.F32
	}
	w.dequant = o.DType
	if w.dequant == tensor.Invalid {
		w.dequant = tensor.F32 // the loader dequantizes to float32 (model.Loader)
	}
	// A checkpoint without readable headers (an index whose shards are not
	// downloaded yet) plans as config.json says.
	fallback := w.dense
	if o.Src != nil {
		for _, p := range t.Params() {
			if dt, ok := storedDType(o.Src, p.Name); ok {
				fallback, w.found = dt, true
				break
			}
		}
	}
	linear := linearParams(t)
	all := make([]counter, world)
	qs := make([]counter, world)
	tied := t.TiedHead()
	for _, p := range t.Params() {
		if !o.Stage.Holds(strings.TrimSuffix(p.Name, ".weight"), tied) {
			continue // another pipeline stage's end
		}
		// A candidate for the scheme; from the config alone Planned decides
		// below, with a checkpoint Stored has decided.
		quantized := o.Quant != nil && linear[p.Name] && len(p.Shape) == 2 && (o.Src == nil || storedQuantized(o, p))
		if quantized && o.Dequantize && o.Src == nil {
			_, quantized = o.Quant.Planned(p.Name, p.Shape[0], p.Shape[1])
		}
		var last [2]int // the previous rank's shard shape and its Planned bytes (ranks mostly share shapes)
		var lastBytes int64
		lastQ := false
		var lay model.QuantLayout
		wideScales := false // int4 scales the CUDA backend widens to float32
		if quantized && !o.Dequantize {
			lay = o.Quant.Layout(p.Name)
			if lay.Format == tensor.QuantInt4Group && o.Src != nil {
				dt, ok := storedDType(o.Src, lay.Scale)
				wideScales = ok && dt != tensor.BF16
			}
		}
		for r := range world {
			shape := p.RankShape(r)
			n, ok := numel(shape)
			if !ok {
				return nil, fmt.Errorf("rank %d: %s %v: %w", r, p.Name, shape, ErrOverflow)
			}
			if n == 0 {
				continue
			}
			if quantized && !o.Dequantize {
				if rows, cols := shardRanges(p, r); !tensor.ShardOnBlocks(lay.Format, lay.Block, p.Shape[0], p.Shape[1], rows, cols) {
					// Sliced after dequantizing, kept dense (model.Loader.Linear).
					if _, q := o.Quant.Planned(p.Name, shape[0], shape[1]); q {
						all[r].add(n, int64(w.dequant.Size()))
						continue
					}
				}
				if r == 0 || last != [2]int{shape[0], shape[1]} {
					last = [2]int{shape[0], shape[1]}
					lastBytes, lastQ = o.Quant.Planned(p.Name, shape[0], shape[1])
					if lastQ && wideScales && lay.Block[1] > 0 {
						// Planned counts bf16 scales; these are kept in
						// float32, 2 more bytes each (engine/backend/cuda
						// uploadInt4).
						lastBytes += 2 * int64(shape[0]) * int64(tensor.CeilDiv(shape[1], lay.Block[1]))
					}
				}
				if lastQ {
					all[r].add(lastBytes)
					qs[r].add(lastBytes)
					w.keptQuantized(r, p.Name, n, int64(shape[1]))
					continue
				}
			}
			if quantized && o.Dequantize {
				all[r].add(n, int64(w.dequant.Size()))
				continue
			}
			dt := denseDType(p.Name, o, w.dense, fallback)
			all[r].add(n, int64(dt.Size()))
			if r == 0 {
				w.counted[dt] += n
			}
		}
	}
	for r := range world {
		var err error
		if w.bytes[r], err = all[r].value(fmt.Sprintf("rank %d weights", r)); err != nil {
			return nil, err
		}
		if w.quant[r], err = qs[r].value(fmt.Sprintf("rank %d quantized weights", r)); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// keptQuantized notes that rank r keeps parameter name, n values of in
// columns, quantized (widening).
func (w *weights) keptQuantized(r int, name string, n, in int64) {
	idx, sub, ok := layerOf(name)
	if !ok {
		return // outside the decoder layers: the head and embeddings are never quantized
	}
	s := w.scratch[r][idx]
	if strings.HasPrefix(sub, "mlp.experts.") {
		s.experts = true
	} else {
		s.linear = max(s.linear, n)
		s.in = max(s.in, in)
	}
	w.scratch[r][idx] = s
}

// shardRanges returns rank r's rows and columns of the 2-D weight p: its
// Ranges entry along the split dimension, the whole of the other (of both
// when p is replicated), as nn's builder hands them to model.Loader.Linear.
func shardRanges(p model.Param, r int) (rows, cols [2]int) {
	rows, cols = [2]int{0, p.Shape[0]}, [2]int{0, p.Shape[1]}
	if r < len(p.Ranges) {
		switch p.Dim {
		case 0:
			rows = p.Ranges[r]
		case 1:
			cols = p.Ranges[r]
		}
	}
	return rows, cols
}

// linearClasses are the vLLM module classes whose weights a quantization
// scheme applies to: the linear layers built with the model's quant_config
// (vLLM's LinearBase subclasses and FusedMoE). The embeddings
// (VocabParallelEmbedding), the LM head (ParallelLMHead) and the router
// (GateLinear: deepseek_v2.py builds the gate with quant_config=None) stay
// dense, as a Loader only asks the scheme about linear layers.
var linearClasses = map[string]bool{"ColumnParallelLinear": true, "RowParallelLinear": true, "MergedColumnParallelLinear": true,
	"QKVParallelLinear": true, "ReplicatedLinear": true, "FusedMoE": true}

// linearParams returns the names of the parameters that belong to modules
// of a linearClasses class.
func linearParams(t *model.Tree) map[string]bool {
	out := map[string]bool{}
	var walk func(m *model.Module)
	walk = func(m *model.Module) {
		if linearClasses[m.Class] {
			for _, p := range m.Params {
				out[p.Name] = true
			}
		}
		for _, c := range m.Children {
			walk(c)
		}
	}
	walk(t.Root)
	return out
}

// storedQuantized reports whether the checkpoint stores weight p in
// o.Quant's format (Quant.Stored, under one of the layouts of meta).
func storedQuantized(o Options, p model.Param) bool {
	for _, n := range candidates(p.Name) {
		if o.Quant.Stored(o.Src, n) != nil {
			return true
		}
	}
	return false
}

// denseDType is the dtype a dense parameter is kept in: --dtype when given;
// else with a checkpoint its stored dtype (fp8 without a scheme and f64
// become float32, as model.Loader does; a non-float dtype, which the
// loader refuses, checkDense has refused before; a parameter the
// checkpoint does not list under any known layout, a fused expert tensor,
// takes the dtype of the first it does list, or config.json's when it
// lists none); without one config.json's dtype. DeepSeek's router correction bias (e_score_correction_bias) is
// float32 whatever the model dtype or --dtype, as vLLM's deepseek_v2.py
// creates it, the checkpoints store it and engine/nn keeps it.
func denseDType(name string, o Options, dense, fallback tensor.DType) tensor.DType {
	if strings.HasSuffix(name, "e_score_correction_bias") {
		return tensor.F32
	}
	if o.DType != tensor.Invalid {
		return o.DType
	}
	if o.Src == nil {
		return dense
	}
	dt, ok := storedDType(o.Src, name)
	if !ok {
		dt = fallback
	}
	if dt == tensor.F8E4M3 || dt == tensor.F64 || !dt.IsFloat() {
		return tensor.F32
	}
	return dt
}

// unquantizable refuses, as the loader does (model.Loader; the error wraps
// model.ErrWeight and is worded as the loader's), parameter p when the
// checkpoint (src) stores it quantized while config.json has no
// quantization_config (qs nil) to read it with: an fp8 tensor, or a
// compressed-tensors NAME_packed (named as the checkpoint holds it, under
// the first of its names, candidates). The plan counted such a checkpoint
// as dense ("none quantized") and said it fits while the load refused it.
func unquantizable(qs model.QuantScheme, src model.WeightSource, p model.Param) error {
	if qs != nil {
		return nil
	}
	for _, n := range candidates(p.Name) {
		if dt, _, ok := src.Meta(n); ok {
			if dt == tensor.F8E4M3 {
				return fmt.Errorf("%w: tensor %s is fp8 but the config has no quantization_config to dequantize it", model.ErrWeight, n)
			}
			return nil
		}
		if _, _, ok := src.Meta(n + "_packed"); ok {
			return fmt.Errorf("%w: tensor %s is stored packed as %s_packed (compressed-tensors int4) but config.json has no quantization_config to unpack it (expected shape %s)",
				model.ErrWeight, n, n, tensor.ShapeString(p.Shape))
		}
	}
	return nil
}

// candidates returns the checkpoint names a tree parameter may be stored
// under: its own, and those of every other layout the loader takes
// (model.CheckpointNames over model.LMLayouts: "language_model.model.layers...",
// "model.language_model.layers...", "language_model.layers...",
// "language_model.lm_head.weight").
func candidates(name string) []string { return model.CheckpointNames(name) }

// storedDType returns the dtype in the header of the first candidate name
// src holds.
func storedDType(src model.WeightSource, name string) (tensor.DType, bool) {
	for _, n := range candidates(name) {
		if dt, _, ok := src.Meta(n); ok {
			return dt, true
		}
	}
	return tensor.Invalid, false
}

// denseCounted returns the dtype most of rank 0's dense values are counted
// at (the checkpoint's stored dtype where its headers were read, ties to
// the smaller dtype code), or w.dense when it counts none.
func (w *weights) denseCounted() tensor.DType {
	best, most := w.dense, int64(0)
	for dt, n := range w.counted {
		if n > most || (n == most && dt < best) {
			best, most = dt, n
		}
	}
	return best
}
