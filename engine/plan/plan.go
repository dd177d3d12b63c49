package plan

import (
	"errors"
	"fmt"
	"strings"

	"hsdb/engine/bytesize"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// ErrMemory is wrapped by Plan.Check when a rank's plan exceeds the memory
// it has; the message names the rank and the shortfall.
var ErrMemory = errors.New("not enough memory")

// DefaultTokens is `hsdb plan`'s --max-tokens: a prefill of 4 sequences ×
// 1024 tokens held in the KV cache (the shape of the real-scale benchmark).
const DefaultTokens = 4096

// Options says what to plan for.
type Options struct {
	// World is the tensor-parallel world size (--tp) the tree was built
	// for; 0 means 1.
	World int
	// Tokens (--max-tokens) is how many tokens the KV cache holds and one
	// forward step computes (a prefill of that many tokens, all sequences
	// together); 0 plans the weights alone, as the loader does.
	Tokens int
	// Seqs (--seqs) is how many sequences the KV cache keeps at once and
	// SeqLen (--seq-len) the longest one's tokens; 0 means 1 and Tokens,
	// at most max_position_embeddings (a longer SeqLen is an error: no
	// sequence is longer).
	// hsdb's engine keeps, per layer, a slot per sequence of a batch, each
	// of the longest sequence's capacity (model.KVCache.Place: each
	// prefill sizes the cache for its batch, decode steps grow it): Seqs ×
	// KVCapacity(SeqLen) rows. 2 sequences of 17 and 9 tokens hold 2 × 32
	// rows, not the 32 of 26 tokens.
	Seqs, SeqLen int
	// DeviceBytes is the memory of one device (--device-memory), or with
	// Shared the memory all ranks share (the CPU backend's virtual ranks
	// on one host); 0 means unknown: the plan is not checked.
	DeviceBytes int64
	Shared      bool
	// DType converts dense weights on load (--dtype); Invalid keeps them as
	// stored, or without weights as config.json's dtype says (Dims.DType).
	DType tensor.DType
	// Act is the dtype activations and the KV cache are computed in
	// (ActivationDType); Invalid means f32.
	Act tensor.DType
	// Quant is the checkpoint's quantization scheme (quantization_config),
	// nil for a dense checkpoint.
	Quant model.QuantScheme
	// Dequantize counts quantized weights dense, at DType or f32, as a
	// backend that dequantizes them on load keeps them (the CPU backend).
	Dequantize bool
	// W8A8 plans fp8 linears run on fp8 activations (engine.Options.W8A8,
	// --w8a8): their input's fp8 copy and cuBLASLt's workspace instead of
	// the widened weight, where larger.
	W8A8 bool
	// Src gives the checkpoint's tensor headers; nil plans from config.json
	// alone. Before anything is counted every parameter the plan counts is
	// checked as the loader checks it, from the headers alone: held in
	// some form (a weight missing is the load's "tensor ... is missing from
	// the checkpoint (expected shape ...)"), dense ones of the config's
	// shape and a float dtype, and with Quant the stored tensors of every
	// quantized linear weight (QuantScheme.Check).
	Src model.WeightSource
	// Stage, when set, plans one pipeline stage (--pp): the tree's ends
	// are counted only where the stage holds them (model.StageEnds).
	Stage *model.StageEnds
}

// Rank is one rank's plan, in bytes.
type Rank struct {
	Rank int `json:"rank"`
	// Weights is every parameter the rank holds as it will be kept;
	// QuantizedWeights is the part stored quantized (data and scales).
	Weights          int64 `json:"weights_bytes"`
	QuantizedWeights int64 `json:"quantized_weights_bytes"`
	// KV is the cache the engine allocates for Options.Seqs sequences of
	// up to Options.SeqLen tokens over the tree's layers, each sequence's
	// capacity rounded as model.KVCapacity rounds it (KVConvention says
	// the layout).
	KV int64 `json:"kv_bytes"`
	// Activations is the peak of one decoder layer's live tensors for a
	// step of Options.Tokens tokens (activationBytes says what is counted).
	Activations int64 `json:"activation_bytes"`
	Total       int64 `json:"total_bytes"`
}

// Plan is the per-rank memory plan of one model at one world size.
type Plan struct {
	Ranks []Rank `json:"ranks"`
	// DeviceBytes is what each rank may use (with Shared, all ranks
	// together); 0 when unknown.
	DeviceBytes int64 `json:"device_bytes"`
	Fits        bool  `json:"fits"`
	Shared      bool  `json:"shared,omitempty"`
	World       int   `json:"world_size"`
	// Checkpoint is true when tensor headers gave the stored dtypes; false
	// for a plan from config.json alone.
	Checkpoint bool `json:"checkpoint"`
	Tokens     int  `json:"max_tokens"`
	// Seqs and SeqLen are the sequences the KV cache is counted for and
	// the longest one's tokens (Options.Seqs, Options.SeqLen, defaults
	// applied).
	Seqs   int `json:"seqs"`
	SeqLen int `json:"seq_len"`
	// Quant describes the quantization counted ("" when dense), Dense the
	// dtype dense weights are counted at (with a checkpoint's headers, the
	// one most of them are stored in), Act the activation/KV dtype.
	Quant string `json:"quantization,omitempty"`
	Dense string `json:"dense_dtype"`
	Act   string `json:"activation_dtype"`
	// KVConvention says what one token's cache entry holds per layer.
	KVConvention string `json:"kv_convention,omitempty"`

	// scheme is the quantization scheme's description and dequant the
	// dtype its weights are dequantized to on load, where they are (the
	// CPU backend, Options.Dequantize; Invalid otherwise): Advice says so.
	scheme  string
	dequant tensor.DType
}

// New plans tree t (built by Config.Tree for o.World ranks) of a model with
// sizes d. Errors: a byte count that overflows int64 (ErrOverflow); a
// SeqLen past d.MaxPos; a checkpoint (o.Src) the load would refuse, a
// weight missing, misshapen or of a dtype it cannot read (wrapping
// model.ErrWeight, in the loader's words).
func New(t *model.Tree, d *model.Dims, o Options) (*Plan, error) {
	world := max(o.World, 1)
	if o.Tokens < 0 {
		return nil, fmt.Errorf("--max-tokens %d: want 0 or more", o.Tokens)
	}
	seqs, seqLen := max(o.Seqs, 1), o.SeqLen
	if o.Seqs < 0 || o.SeqLen < 0 {
		return nil, fmt.Errorf("--seqs %d, --seq-len %d: want 1 or more", o.Seqs, o.SeqLen)
	}
	// No sequence is longer than max_position_embeddings (the engine
	// refuses such a row, as vLLM's max_model_len does): --seq-len past it
	// plans a cache no run allocates, and the default (--max-tokens, the
	// tokens of a step, which may pack several sequences) stops there.
	if d != nil && d.MaxPos > 0 && seqLen > d.MaxPos {
		return nil, SeqLenPastMaxPos(seqLen, d.MaxPos)
	}
	if seqLen == 0 {
		seqLen = o.Tokens
		if d != nil && d.MaxPos > 0 {
			seqLen = min(seqLen, d.MaxPos)
		}
	}
	act := o.Act
	if act == tensor.Invalid {
		act = tensor.F32
	}
	p := &Plan{DeviceBytes: o.DeviceBytes, Shared: o.Shared, World: world, Tokens: o.Tokens, Seqs: seqs, SeqLen: seqLen, Act: act.String()}
	w, err := newWeights(t, d, o, world)
	if err != nil {
		return nil, err
	}
	p.Dense, p.Checkpoint = w.denseCounted().String(), w.found
	if o.Quant != nil {
		p.Quant = o.Quant.String()
		if o.Dequantize {
			p.Quant += fmt.Sprintf(" (dequantized on load to %s)", w.dequant)
			p.scheme, p.dequant = o.Quant.String(), w.dequant
		}
	}
	layers := layerParams(t)
	p.KVConvention = kvConvention(layers, d)
	for r := range world {
		rk := Rank{Rank: r, Weights: w.bytes[r], QuantizedWeights: w.quant[r]}
		if o.Tokens > 0 {
			if rk.KV, err = kvBytes(layers, d, r, int64(seqs), int64(seqLen), int64(act.Size())); err != nil {
				return nil, fmt.Errorf("rank %d: %w", r, err)
			}
			if rk.Activations, err = activationBytes(layers, d, r, int64(o.Tokens), int64(act.Size()), w.scratch[r], o.W8A8); err != nil {
				return nil, fmt.Errorf("rank %d: %w", r, err)
			}
		}
		var c counter
		c.add(rk.Weights)
		c.add(rk.KV)
		c.add(rk.Activations)
		if rk.Total, err = c.value(fmt.Sprintf("rank %d total", r)); err != nil {
			return nil, err
		}
		p.Ranks = append(p.Ranks, rk)
	}
	p.Fits = p.Check() == nil
	return p, nil
}

// Weights returns each rank's weight bytes.
func (p *Plan) Weights() []int64 {
	out := make([]int64, len(p.Ranks))
	for i, r := range p.Ranks {
		out[i] = r.Weights
	}
	return out
}

// Headroom is what a plan that fits leaves free: with Shared (ranks in one
// host) DeviceBytes less all ranks' totals together, otherwise less the
// fullest rank's (each rank has a device of its own). Negative when it
// does not fit; an error only when the sum overflows.
func (p *Plan) Headroom() (int64, error) {
	if p.Shared {
		var c counter
		for _, r := range p.Ranks {
			c.add(r.Total)
		}
		total, err := c.value("total")
		if err != nil {
			return 0, err
		}
		return p.DeviceBytes - total, nil
	}
	most := int64(0)
	for _, r := range p.Ranks {
		most = max(most, r.Total)
	}
	return p.DeviceBytes - most, nil
}

// Check returns nil when every rank fits its device (with Shared, when all
// ranks together fit the host), or when DeviceBytes is unknown; otherwise
// an error wrapping ErrMemory naming the rank that is short, by how much,
// and what its total is made of, ending with Advice.
func (p *Plan) Check() error {
	if p.DeviceBytes <= 0 {
		return nil
	}
	if p.Shared {
		var c counter
		per := make([]string, len(p.Ranks))
		for i, r := range p.Ranks {
			c.add(r.Total)
			per[i] = fmt.Sprintf("rank %d %s", r.Rank, bytesize.Binary(r.Total))
		}
		total, err := c.value("total")
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMemory, err)
		}
		if total <= p.DeviceBytes {
			return nil
		}
		return fmt.Errorf("%w: the %d ranks sharing the host need %s in all (%s) but %s is available: %s short; %s",
			ErrMemory, len(p.Ranks), bytesize.Binary(total), strings.Join(per, ", "), bytesize.Binary(p.DeviceBytes), bytesize.Binary(total-p.DeviceBytes), p.Advice())
	}
	worst := -1
	for i, r := range p.Ranks {
		if r.Total > p.DeviceBytes && (worst < 0 || r.Total > p.Ranks[worst].Total) {
			worst = i
		}
	}
	if worst < 0 {
		return nil
	}
	r := p.Ranks[worst]
	over := 0
	for _, x := range p.Ranks {
		if x.Total > p.DeviceBytes {
			over++
		}
	}
	return fmt.Errorf("%w: rank %d needs %s (weights %s, KV cache %s, activations %s) but its device has %s: %s short (%d of %d ranks do not fit); %s",
		ErrMemory, r.Rank, bytesize.Binary(r.Total), bytesize.Binary(r.Weights), bytesize.Binary(r.KV), bytesize.Binary(r.Activations),
		bytesize.Binary(p.DeviceBytes), bytesize.Binary(r.Total-p.DeviceBytes), over, len(p.Ranks), p.Advice())
}

// ActivationDType is the dtype a device computes in: dt (--dtype) when
// given, else the model's (config.json's torch_dtype, as HF's
// dtype="auto" loads it); anything but f32, bf16 and f16 computes in f32.
func ActivationDType(dt tensor.DType, d *model.Dims) tensor.DType {
	if dt == tensor.Invalid {
		dt = d.DType
	}
	switch dt {
	case tensor.F32, tensor.BF16, tensor.F16:
		return dt
	}
	return tensor.F32
}

// SeqLenPastMaxPos is the refusal of a --seq-len of seqLen tokens on a
// model whose max_position_embeddings is maxPos (seqLen > maxPos): New's,
// and hsdb plan's before it plans.
func SeqLenPastMaxPos(seqLen, maxPos int) error {
	return fmt.Errorf("--seq-len %d is more than max_position_embeddings %d: no sequence can be longer (hsdb refuses such a row)", seqLen, maxPos)
}
