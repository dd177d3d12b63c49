package llama2c

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
)

// TensorInfo is one HF tensor of a llama2.c checkpoint as Read makes it:
// its HF name and shape ([out, in] for a linear); every one is float32.
type TensorInfo struct {
	Name  string
	Shape []int
}

// hfTensor is a TensorInfo with where Read takes it from: llama2.c array
// src (run.c's memory_map_weights name), layer layer of it (the whole
// array when layer < 0), its rows permuted from llama2.c's RoPE pairs to
// HF's (PermuteRoPE) with ropeHeads heads when ropeHeads > 0.
type hfTensor struct {
	TensorInfo
	src       string
	layer     int
	ropeHeads int
}

// hfTensors lists the HF tensors a checkpoint with header h holds, in
// Checkpoint.Order: model.embed_tokens.weight [vocab, dim]; per layer i
// model.layers.{i}.input_layernorm.weight [dim], self_attn.{q,k,v,o}_proj
// .weight [dim, dim], [kv_dim, dim], [kv_dim, dim], [dim, dim],
// post_attention_layernorm.weight [dim], mlp.{gate,down,up}_proj.weight
// [hidden, dim], [dim, hidden], [hidden, dim] (run.c's w1, w2, w3);
// model.norm.weight [dim]; lm_head.weight [vocab, dim] when the classifier
// is stored apart (VocabSize < 0). kv_dim is n_kv_heads · dim/n_heads.
// freq_cis_real and freq_cis_imag are not model tensors (HF computes RoPE).
// The one list Read and Source name and shape tensors by.
func (h Header) hfTensors() []hfTensor {
	vocab, dim, hidden, L, nh, nkv := int(h.vocab()), int(h.Dim), int(h.HiddenDim), int(h.Layers), int(h.Heads), int(h.KVHeads)
	kvDim := nkv * (dim / nh)
	out := make([]hfTensor, 0, 2+9*L+1)
	add := func(name, src string, layer, rope int, shape ...int) {
		out = append(out, hfTensor{TensorInfo{name, shape}, src, layer, rope})
	}
	add("model.embed_tokens.weight", "token_embedding", -1, 0, vocab, dim)
	for i := range L {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", "rms_att", i, 0, dim)
		add(p+"self_attn.q_proj.weight", "wq", i, nh, dim, dim)
		add(p+"self_attn.k_proj.weight", "wk", i, nkv, kvDim, dim)
		add(p+"self_attn.v_proj.weight", "wv", i, 0, kvDim, dim)
		add(p+"self_attn.o_proj.weight", "wo", i, 0, dim, dim)
		add(p+"post_attention_layernorm.weight", "rms_ffn", i, 0, dim)
		add(p+"mlp.gate_proj.weight", "w1", i, 0, hidden, dim)
		add(p+"mlp.down_proj.weight", "w2", i, 0, dim, hidden)
		add(p+"mlp.up_proj.weight", "w3", i, 0, hidden, dim)
	}
	add("model.norm.weight", "rms_final", -1, 0, dim)
	if h.VocabSize < 0 {
		add("lm_head.weight", "wcls", -1, 0, vocab, dim)
	}
	return out
}

// Tensors lists the HF tensors a checkpoint with this header holds, names
// and shapes, in Checkpoint.Order (all float32): what Read returns, known
// from the header alone.
func (h Header) Tensors() []TensorInfo {
	ts := h.hfTensors()
	out := make([]TensorInfo, len(ts))
	for i, t := range ts {
		out[i] = TensorInfo{t.Name, slices.Clone(t.Shape)}
	}
	return out
}

// take returns t's values from its llama2.c array a (the whole array's
// float32s), converted as Read converts them: the layer's slice, the
// query and key rows permuted to HF's RoPE halves.
func (t hfTensor) take(a []float32) []float32 {
	n := tensor.Numel(t.Shape)
	if t.layer >= 0 {
		a = a[t.layer*n : (t.layer+1)*n]
	}
	if t.ropeHeads > 0 {
		return PermuteRoPE(a, t.ropeHeads, t.Shape[0], t.Shape[1])
	}
	return a
}

// Source is a llama2.c checkpoint known from its header (OpenSource): its
// HF tensors' names, shapes and dtype (float32) without reading their
// data, which Tensor reads one tensor at a time. It is a model.
// WeightSource (Meta, Tensor) that lists its tensors (Names), so that a
// memory plan (engine.PlanModel) reads 28 bytes of a checkpoint of
// gigabytes.
type Source struct {
	Path   string
	Header Header
	size   int64
	byName map[string]int
	ts     []hfTensor
	off    map[string]int64 // llama2.c array name -> byte offset in the file
}

// OpenSource reads and checks the header of the llama2.c checkpoint at path
// (ReadHeader: the file's size checked against the arrays the header
// declares) and returns the Source it describes. Errors are ReadHeader's.
func OpenSource(path string) (*Source, error) {
	h, size, err := headerOf(path)
	if err != nil {
		return nil, err
	}
	s := &Source{Path: path, Header: h, size: size, byName: map[string]int{}, ts: h.hfTensors(), off: map[string]int64{}}
	for i, t := range s.ts {
		s.byName[t.Name] = i
	}
	off := int64(HeaderSize)
	for _, a := range h.arrays() {
		s.off[a.name] = off
		off += 4 * int64(tensor.Numel(a.shape))
	}
	return s, nil
}

// Meta returns the named tensor's dtype (float32) and shape, as Read's
// tensor of that name has them; ok is false for a name the checkpoint does
// not hold.
func (s *Source) Meta(name string) (tensor.DType, []int, bool) {
	i, ok := s.byName[name]
	if !ok {
		return tensor.Invalid, nil, false
	}
	return tensor.F32, slices.Clone(s.ts[i].Shape), true
}

// Names returns the tensor names in Checkpoint.Order.
func (s *Source) Names() []string {
	out := make([]string, len(s.ts))
	for i, t := range s.ts {
		out[i] = t.Name
	}
	return out
}

// Tensor reads the named tensor from the file (its bytes alone) and
// converts it as Read does. Errors name the file and the tensor: a name
// the checkpoint does not hold, a file that is no longer the size its
// header was checked against, a failed read.
func (s *Source) Tensor(name string) (*tensor.Tensor, error) {
	i, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %s", s.Path, name)
	}
	t := s.ts[i]
	fh, err := regfile.Open(s.Path)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || st.Size() != s.size {
		return nil, fmt.Errorf("%w %s: tensor %s: the file is no longer the %d bytes its header was checked against (changed since it was opened?)", ErrFormat, s.Path, name, s.size)
	}
	n := tensor.Numel(t.Shape)
	off := s.off[t.src]
	if t.layer >= 0 {
		off += 4 * int64(t.layer) * int64(n)
	}
	buf := make([]byte, 4*n)
	if _, err := fh.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%w %s: tensor %s (array %s at offset %d): %v", ErrFormat, s.Path, name, t.src, off, err)
	}
	v := make([]float32, n)
	for j := range v {
		v[j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*j:]))
	}
	one := t
	one.layer = -1 // v is the layer's slice already
	return tensor.FromF32(one.take(v), t.Shape...), nil
}
