package llama2c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
)

// Header is the llama2.c checkpoint header (run.c's Config): seven
// little-endian int32. A negative VocabSize means the classifier weights are
// stored separately instead of shared with the token embedding.
type Header struct {
	Dim, HiddenDim, Layers, Heads, KVHeads, VocabSize, SeqLen int32
}

// Checkpoint is a llama2.c model in HF layout.
type Checkpoint struct {
	Header Header
	Shared bool // the classifier is the token embedding (tie_word_embeddings)
	// Tensors in HF naming, float32, [out, in] for linears:
	// model.embed_tokens.weight [vocab, dim], model.layers.{i}.self_attn.
	// {q,k,v,o}_proj.weight, model.layers.{i}.mlp.{gate,up,down}_proj.weight,
	// model.layers.{i}.{input,post_attention}_layernorm.weight [dim],
	// model.norm.weight [dim], lm_head.weight [vocab, dim] when not shared.
	Tensors map[string]*tensor.Tensor
	Order   []string // tensor names in file order
}

// ErrFormat is wrapped by every error about a malformed checkpoint.
var ErrFormat = errors.New("llama2.c checkpoint")

// Read loads and converts a llama2.c checkpoint. Errors name the file and
// say which array is short or which header field is invalid.
func Read(path string) (*Checkpoint, error) {
	// A regular file only: /dev/zero would be read until memory runs out,
	// a named pipe waited on forever. The header says how many bytes the
	// arrays take; only those are read (a huge or sparse file is refused
	// from its size, not read to the end).
	fh, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	data := make([]byte, min(size, 28))
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrFormat, path, err)
	}
	if len(data) < 28 {
		return nil, fmt.Errorf("%w %s: %d bytes, shorter than the 28-byte header", ErrFormat, path, len(data))
	}
	var h Header
	f := []*int32{&h.Dim, &h.HiddenDim, &h.Layers, &h.Heads, &h.KVHeads, &h.VocabSize, &h.SeqLen}
	for i, p := range f {
		*p = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	ck := &Checkpoint{Header: h, Shared: h.VocabSize > 0, Tensors: map[string]*tensor.Tensor{}}
	vocab := int(h.VocabSize)
	if vocab < 0 {
		vocab = -vocab
	}
	dim, hidden, L, nh, nkv, seq := int(h.Dim), int(h.HiddenDim), int(h.Layers), int(h.Heads), int(h.KVHeads), int(h.SeqLen)
	names := []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	for i, v := range []int{dim, hidden, L, nh, nkv, vocab, seq} {
		if v <= 0 || v > 1<<20 {
			return nil, fmt.Errorf("%w %s: header field %s = %d is not a plausible size", ErrFormat, path, names[i], v)
		}
	}
	if dim%nh != 0 || nh%nkv != 0 {
		return nil, fmt.Errorf("%w %s: dim %d, n_heads %d, n_kv_heads %d do not divide", ErrFormat, path, dim, nh, nkv)
	}
	hs := dim / nh
	kvDim := nkv * hs
	off := 28
	take := func(what string, shape ...int) ([]float32, error) {
		n := tensor.Numel(shape)
		if off+4*n > len(data) {
			return nil, fmt.Errorf("%w %s: array %s %v needs %d bytes at offset %d, the file has %d", ErrFormat, path, what, shape, 4*n, off, len(data))
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
		}
		off += 4 * n
		return v, nil
	}
	type arr struct {
		name  string
		shape []int
	}
	order := []arr{{"token_embedding", []int{vocab, dim}}, {"rms_att", []int{L, dim}}, {"wq", []int{L, dim, dim}}, {"wk", []int{L, kvDim, dim}},
		{"wv", []int{L, kvDim, dim}}, {"wo", []int{L, dim, dim}}, {"rms_ffn", []int{L, dim}}, {"w1", []int{L, hidden, dim}},
		{"w2", []int{L, dim, hidden}}, {"w3", []int{L, hidden, dim}}, {"rms_final", []int{dim}}, {"freq_cis_real", []int{seq, hs / 2}}, {"freq_cis_imag", []int{seq, hs / 2}}}
	if !ck.Shared {
		order = append(order, arr{"wcls", []int{vocab, dim}})
	}
	need := int64(off)
	for _, a := range order {
		need += 4 * int64(tensor.Numel(a.shape))
	}
	if size > need {
		return nil, fmt.Errorf("%w %s: %d bytes left after the last array (header says dim %d, %d layers, vocab %d)", ErrFormat, path, size-need, dim, L, h.VocabSize)
	}
	// size <= need: read it all; take names the first array it cuts short.
	data = append(data, make([]byte, size-int64(len(data)))...)
	if _, err := io.ReadFull(fh, data[28:]); err != nil {
		return nil, fmt.Errorf("%w %s: %v (the file changed while read?)", ErrFormat, path, err)
	}
	raw := map[string][]float32{}
	for _, a := range order {
		v, err := take(a.name, a.shape...)
		if err != nil {
			return nil, err
		}
		raw[a.name] = v
	}
	add := func(name string, v []float32, shape ...int) {
		ck.Tensors[name] = tensor.FromF32(v, shape...)
		ck.Order = append(ck.Order, name)
	}
	add("model.embed_tokens.weight", raw["token_embedding"], vocab, dim)
	per := func(a string, i, n int) []float32 { return raw[a][i*n : (i+1)*n] }
	for i := range L {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", per("rms_att", i, dim), dim)
		add(p+"self_attn.q_proj.weight", PermuteRoPE(per("wq", i, dim*dim), nh, dim, dim), dim, dim)
		add(p+"self_attn.k_proj.weight", PermuteRoPE(per("wk", i, kvDim*dim), nkv, kvDim, dim), kvDim, dim)
		add(p+"self_attn.v_proj.weight", per("wv", i, kvDim*dim), kvDim, dim)
		add(p+"self_attn.o_proj.weight", per("wo", i, dim*dim), dim, dim)
		add(p+"post_attention_layernorm.weight", per("rms_ffn", i, dim), dim)
		add(p+"mlp.gate_proj.weight", per("w1", i, hidden*dim), hidden, dim)
		add(p+"mlp.down_proj.weight", per("w2", i, dim*hidden), dim, hidden)
		add(p+"mlp.up_proj.weight", per("w3", i, hidden*dim), hidden, dim)
	}
	add("model.norm.weight", raw["rms_final"], dim)
	if !ck.Shared {
		add("lm_head.weight", raw["wcls"], vocab, dim)
	}
	if off != len(data) {
		return nil, fmt.Errorf("%w %s: %d bytes left after the last array (header says dim %d, %d layers, vocab %d)", ErrFormat, path, len(data)-off, dim, L, h.VocabSize)
	}
	return ck, nil
}

// PermuteRoPE reorders the rows of a query or key projection w [rows, cols]
// (rows = heads·head_size) from llama2.c's RoPE pairing, which rotates
// adjacent rows (2j, 2j+1) of each head, to HF's, which rotates rows
// (j, j+head_size/2): new row p·head_size/2 + j = old row 2j + p. This is the
// permutation of HF's convert_llama_weights_to_hf.py. Attention scores are
// unchanged because queries and keys are permuted alike.
func PermuteRoPE(w []float32, heads, rows, cols int) []float32 {
	hs := rows / heads
	out := make([]float32, len(w))
	for h := range heads {
		for j := range hs / 2 {
			for p := range 2 {
				src := (h*hs + 2*j + p) * cols
				dst := (h*hs + p*hs/2 + j) * cols
				copy(out[dst:dst+cols], w[src:src+cols])
			}
		}
	}
	return out
}
