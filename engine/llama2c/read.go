package llama2c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

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

// HeaderSize is the size of a checkpoint's header in bytes: seven int32.
const HeaderSize = 28

// ReadHeader reads and checks the header of the llama2.c checkpoint at
// path and checks the file's size against the arrays it declares, without
// reading them: what a config alone needs (modelpath.ConfigJSON, a
// command's checks before the load) costs HeaderSize bytes of a checkpoint
// of gigabytes, which Read then reads once. Errors are Read's (ErrFormat,
// naming the file: a header field, the first array the file cuts short,
// the bytes left after the last one), and those of opening a file that is
// not regular.
func ReadHeader(path string) (Header, error) {
	h, _, err := headerOf(path)
	return h, err
}

// headerOf opens the regular file at path, reads and checks its header
// (readHeader) and closes it: the header and the file's size in bytes.
func headerOf(path string) (Header, int64, error) {
	fh, err := regfile.Open(path)
	if err != nil {
		return Header{}, 0, err
	}
	defer fh.Close()
	return readHeader(fh, path)
}

// array is one of a checkpoint's float32 arrays, in file order, with its
// shape in llama2.c's layout (run.c's memory_map_weights).
type array struct {
	name  string
	shape []int
}

// arrays lists the arrays h declares, in file order.
func (h Header) arrays() []array {
	vocab, dim, hidden, L := int(h.vocab()), int(h.Dim), int(h.HiddenDim), int(h.Layers)
	hs := dim / int(h.Heads)
	kvDim := int(h.KVHeads) * hs
	seq := int(h.SeqLen)
	order := []array{{"token_embedding", []int{vocab, dim}}, {"rms_att", []int{L, dim}}, {"wq", []int{L, dim, dim}}, {"wk", []int{L, kvDim, dim}},
		{"wv", []int{L, kvDim, dim}}, {"wo", []int{L, dim, dim}}, {"rms_ffn", []int{L, dim}}, {"w1", []int{L, hidden, dim}},
		{"w2", []int{L, dim, hidden}}, {"w3", []int{L, hidden, dim}}, {"rms_final", []int{dim}}, {"freq_cis_real", []int{seq, hs / 2}}, {"freq_cis_imag", []int{seq, hs / 2}}}
	if h.VocabSize < 0 { // the classifier stored apart
		order = append(order, array{"wcls", []int{vocab, dim}})
	}
	return order
}

// vocab is |VocabSize|.
func (h Header) vocab() int32 { return max(h.VocabSize, -h.VocabSize) }

// readHeader reads the header from fh (at its start), checks its fields
// and that the file is exactly as long as the arrays the header declares,
// and returns it with the file's size.
func readHeader(fh *os.File, path string) (Header, int64, error) {
	st, err := fh.Stat()
	if err != nil {
		return Header{}, 0, err
	}
	size := st.Size()
	data := make([]byte, min(size, HeaderSize))
	if _, err := io.ReadFull(fh, data); err != nil {
		return Header{}, 0, fmt.Errorf("%w %s: %v", ErrFormat, path, err)
	}
	if len(data) < HeaderSize {
		return Header{}, 0, fmt.Errorf("%w %s: %d bytes, shorter than the 28-byte header", ErrFormat, path, len(data))
	}
	var h Header
	f := []*int32{&h.Dim, &h.HiddenDim, &h.Layers, &h.Heads, &h.KVHeads, &h.VocabSize, &h.SeqLen}
	for i, p := range f {
		*p = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	names := []string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}
	for i, v := range []int32{h.Dim, h.HiddenDim, h.Layers, h.Heads, h.KVHeads, h.vocab(), h.SeqLen} {
		if v <= 0 || v > 1<<20 {
			return h, 0, fmt.Errorf("%w %s: header field %s = %d is not a plausible size", ErrFormat, path, names[i], v)
		}
	}
	if h.Dim%h.Heads != 0 || h.Heads%h.KVHeads != 0 {
		return h, 0, fmt.Errorf("%w %s: dim %d, n_heads %d, n_kv_heads %d do not divide", ErrFormat, path, h.Dim, h.Heads, h.KVHeads)
	}
	// The arrays' bytes, from the header alone: a file cut short is named
	// by its first short array, one too long by the bytes left over (a
	// huge or sparse file is refused from its size, not read).
	off := int64(HeaderSize)
	for _, a := range h.arrays() {
		n := 4 * int64(tensor.Numel(a.shape))
		if off+n > size {
			return h, 0, fmt.Errorf("%w %s: array %s %v needs %d bytes at offset %d, the file has %d", ErrFormat, path, a.name, a.shape, n, off, size)
		}
		off += n
	}
	if size > off {
		return h, 0, fmt.Errorf("%w %s: %d bytes left after the last array (header says dim %d, %d layers, vocab %d)", ErrFormat, path, size-off, h.Dim, h.Layers, h.VocabSize)
	}
	return h, size, nil
}

// Read loads and converts a llama2.c checkpoint. Errors name the file and
// say which array is short or which header field is invalid (readHeader,
// before any array is read).
func Read(path string) (*Checkpoint, error) {
	// A regular file only: /dev/zero would be read until memory runs out,
	// a named pipe waited on forever.
	fh, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	h, size, err := readHeader(fh, path)
	if err != nil {
		return nil, err
	}
	data := make([]byte, size-HeaderSize)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("%w %s: %v (the file changed while read?)", ErrFormat, path, err)
	}
	raw := map[string][]float32{}
	off := 0
	for _, a := range h.arrays() { // readHeader checked that they fill the file
		v := make([]float32, tensor.Numel(a.shape))
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
		}
		off += 4 * len(v)
		raw[a.name] = v
	}
	ck := &Checkpoint{Header: h, Shared: h.VocabSize > 0, Tensors: map[string]*tensor.Tensor{}}
	for _, t := range h.hfTensors() { // the names and shapes Header.Tensors and Source give
		ck.Tensors[t.Name] = tensor.FromF32(t.take(raw[t.src]), t.Shape...)
		ck.Order = append(ck.Order, t.Name)
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
