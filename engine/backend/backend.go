package backend

import (
	"fmt"

	"hsdb/engine/tensor"
)

// Tensor is a handle to a tensor that lives on a Device. Every op sees a
// tensor as the 2-D row-major matrix [Rows, Cols] where Rows is the first
// dimension and Cols the product of the others; activations are
// [tokens, features]. Handles are only valid on the device that made them.
type Tensor interface {
	Shape() []int
	DType() tensor.DType
}

// AttnArgs describes one causal attention call over a flattened token batch
// (vLLM's varlen layout: the sequences of a step are concatenated along the
// token dimension). Token t belongs to a sequence whose keys and values sit in
// cache rows Base[t] .. Base[t]+Pos[t] (position 0 .. Pos[t] of that
// sequence); t attends to exactly those rows, or to the last Window of them
// when Window > 0 (Mistral's sliding window: keys at positions
// Pos[t]-Window+1 .. Pos[t]).
//
// Heads query heads of width DK attend to KVHeads key heads of width DK and
// value heads of width DV (grouped-query attention: query head h uses kv head
// h / (Heads/KVHeads), as HF's repeat_kv). DK may differ from DV (DeepSeek's
// MLA: qk_nope+qk_rope vs v_head_dim). Scale multiplies q·k before softmax
// (1/sqrt(DK) unless the architecture says otherwise).
type AttnArgs struct {
	Heads, KVHeads int
	DK, DV         int
	Scale          float32
	Window         int
	Base           []int32 // [tokens] cache row of position 0 of the token's sequence
	Pos            []int32 // [tokens] position of the token within its sequence
}

// RoPEArgs describes a rotary position embedding (Su et al. 2021, RoFormer)
// applied to x [tokens, Heads*HeadDim]: for each head, pairs of elements are
// rotated by angle Pos[t]*InvFreq[i], i in [0, HeadDim/2). Interleaved
// selects the pairing: false rotates the halves (x[i], x[i+HeadDim/2]) as HF's
// rotate_half and vLLM's is_neox_style=True; true rotates adjacent pairs
// (x[2i], x[2i+1]) as llama2.c, GPT-J and DeepSeek with rope_interleave. cos
// and sin are multiplied by MScale (YaRN's attention factor; 1 otherwise).
//
// Stride and Offset place the rotated part inside wider heads: x is then
// [tokens, Heads*Stride], head h of token t occupies columns [h·Stride,
// (h+1)·Stride) and only its HeadDim columns from Offset rotate, the others
// pass unchanged (DeepSeek MLA's query, per head [q_nope | q_pe]: Stride
// 192, Offset 128, HeadDim 64; HF rotates the q_pe slice and concatenates).
// Stride 0 means HeadDim (and Offset 0).
type RoPEArgs struct {
	Heads, HeadDim int
	Pos            []int32   // [tokens]
	InvFreq        []float32 // [HeadDim/2]
	MScale         float32
	Interleaved    bool
	Stride, Offset int
}

// HeadStride returns the columns per head of the rotated tensor: Stride,
// or HeadDim when Stride is 0.
func (a *RoPEArgs) HeadStride() int {
	if a.Stride == 0 {
		return a.HeadDim
	}
	return a.Stride
}

// Check reports whether a fits x [tokens, cols]: an even HeadDim inside
// each head at Offset, Heads heads filling cols, one position per token
// and HeadDim/2 frequencies.
func (a *RoPEArgs) Check(tokens, cols int) error {
	s := a.HeadStride()
	if a.Heads <= 0 || a.HeadDim <= 0 || a.HeadDim%2 != 0 || a.Offset < 0 || a.Offset+a.HeadDim > s ||
		cols != a.Heads*s || len(a.Pos) != tokens || len(a.InvFreq) != a.HeadDim/2 {
		return fmt.Errorf("x [%d, %d] for %d heads of %d columns rotating %d from %d, %d positions, %d frequencies",
			tokens, cols, a.Heads, s, a.HeadDim, a.Offset, len(a.Pos), len(a.InvFreq))
	}
	return nil
}

// MLAKVArgs describes the key and value write of DeepSeek's multi-head
// latent attention (WriteMLAKV): Heads heads, qk_nope_head_dim Nope,
// qk_rope_head_dim Rope, v_head_dim V, and the row of k and v each of
// the written tokens goes to.
type MLAKVArgs struct {
	Heads, Nope, Rope, V int
	Rows                 []int32 // [tokens]
}

// Device is one backend device as one rank sees it: it owns tensors and runs
// the forward pass's building-block ops on them. The CPU backend computes in
// float32; weights may be stored f32, bf16 or f16 and are widened on use. An
// op that fails (out of device memory, a driver error) panics with a
// *DeviceError; the forward driver recovers it and reports it with the rank
// and site. Ops allocate their outputs; Free gives memory back early (the CPU
// backend leaves it to the garbage collector).
type Device interface {
	// Name identifies the device in messages: "cpu", "cuda:3".
	Name() string
	// ActDType is the dtype of activations this device computes in.
	ActDType() tensor.DType

	// Upload makes a persistent device tensor from a host tensor, keeping
	// its dtype. The CPU backend may alias t's data (which must then stay
	// unchanged).
	Upload(t *tensor.Tensor) Tensor
	// UploadQuantized makes a persistent device tensor of a quantized
	// linear weight (fp8 block-scaled, int4 group-scaled: see
	// tensor.QuantFormat) whose Shape is the logical [out, in] and which
	// Linear accepts as its weight. A device that computes only on dense
	// weights (the CPU backend) dequantizes it to dt, the weight dtype the
	// user asked for (Invalid: f32); a device that keeps it quantized (the
	// CUDA backend) stores data and scales as they are and reports the
	// quantized storage dtype. q must pass Check.
	UploadQuantized(q *tensor.Quantized, dt tensor.DType) Tensor
	// Zeros allocates a persistent zeroed tensor (KV caches).
	Zeros(dt tensor.DType, shape ...int) Tensor
	// Alloc allocates a zeroed activation tensor (ActDType) owned by the
	// current scope, like an op output (MoE accumulators).
	Alloc(shape ...int) Tensor
	// Free releases a tensor's memory now; it must not be used afterwards.
	Free(t Tensor)
	// PushScope opens a scope: the outputs of ops from now on belong to it
	// (Upload and Zeros are persistent and never scoped).
	PushScope()
	// PopScope frees every op output allocated since the matching PushScope
	// except keep, which move to the enclosing scope (or become persistent
	// at the outermost level). A forward pass opens one scope per step and
	// one per decoder layer, so device memory holds one layer's activations.
	PopScope(keep ...Tensor)
	// Reshape returns a view of t with a new shape of equal element count.
	Reshape(t Tensor, shape ...int) Tensor
	// ToHost copies rows [r0,r1) and columns [c0,c1) of t (as [Rows, Cols])
	// to a new host f32 tensor of shape [r1-r0, c1-c0].
	ToHost(t Tensor, r0, r1, c0, c1 int) *tensor.Tensor
	// Moments reduces rows [r0,r1) × columns [c0,c1) of t in one pass where
	// the data lives; only the result crosses to the host.
	Moments(t Tensor, r0, r1, c0, c1 int) tensor.Moments
	// MemoryInUse returns bytes of device memory held by live tensors
	// (weights, caches and activations together).
	MemoryInUse() int64

	// Embedding looks up ids in table [vocabShard, hidden] whose first row is
	// vocabulary id start: rows for ids outside [start, start+vocabShard) are
	// zero (vLLM's VocabParallelEmbedding masked lookup). Out: [tokens, hidden].
	Embedding(table Tensor, ids []int32, start int) Tensor
	// Linear computes y = x·Wᵀ + b for x [tokens, in], w [out, in] (the
	// nn.Linear layout) and optional b [out] (nil for none). Out: [tokens, out].
	Linear(x, w, b Tensor) Tensor
	// RMSNorm computes y = x / sqrt(mean(x²) + eps) · w over each row of x
	// [rows, n] with w [n] (Zhang & Sennrich 2019; HF LlamaRMSNorm computes in
	// float32 as here).
	RMSNorm(x, w Tensor, eps float32) Tensor
	// AddRMSNorm is vLLM's fused add + RMSNorm: sum = x + residual, y =
	// RMSNorm(sum). It returns (y, sum); sum is the new residual.
	AddRMSNorm(x, residual, w Tensor, eps float32) (y, sum Tensor)
	// Add returns a + b elementwise (same shapes).
	Add(a, b Tensor) Tensor
	// Scale returns a · s elementwise.
	Scale(a Tensor, s float32) Tensor
	// LinearF32 computes y = x·Wᵀ in float32 for x [tokens, in] in the
	// activation dtype and w [out, in]: every product is of the exact
	// float32 widenings of x and w, summed in float32, and y is float32
	// [tokens, out]. HF computes DeepSeek's router logits so
	// (DeepseekV3TopkRouter: F.linear(hidden_states.float(),
	// weight.float())); a device may skip materialising the widened x.
	LinearF32(x, w Tensor) Tensor
	// ToF32 returns x converted to float32 (x itself when it already is):
	// a scoped activation, for the few computations HF does in float32
	// whatever the model's dtype (DeepSeek's router logits,
	// DeepseekV3TopkRouter's F.linear on hidden_states.float()).
	ToF32(x Tensor) Tensor
	// SiluMul returns silu(gate) · up elementwise (vLLM's SiluAndMul on the
	// two halves of gate_up_proj's output; silu(x) = x·sigmoid(x)).
	SiluMul(gate, up Tensor) Tensor
	// RoPE returns x [tokens, Heads*HeadDim] (or [tokens, Heads*Stride])
	// rotated as RoPEArgs says.
	RoPE(x Tensor, a *RoPEArgs) Tensor
	// RoPEInPlace rotates x as RoPE does, in place.
	RoPEInPlace(x Tensor, a *RoPEArgs)
	// SliceCols copies columns [c0, c1) of x [rows, cols] to a new tensor
	// [rows, c1-c0].
	SliceCols(x Tensor, c0, c1 int) Tensor
	// ConcatCols joins tensors of equal rows along columns.
	ConcatCols(xs ...Tensor) Tensor
	// GatherRows returns x[idx[i]] for each i: [len(idx), cols].
	GatherRows(x Tensor, idx []int32) Tensor
	// ScatterAddRows adds w[i]·src[i] to dst[idx[i]] in place (MoE combine);
	// w nil means all ones.
	ScatterAddRows(dst, src Tensor, idx []int32, w []float32)
	// CopyRows copies n rows of src starting at srcRow into dst starting at
	// dstRow (same cols and dtype).
	CopyRows(dst Tensor, dstRow int, src Tensor, srcRow, n int)
	// WriteRows copies row i of src into row rows[i] of dst (KV-cache write).
	WriteRows(dst, src Tensor, rows []int32)
	// WriteMLAKV writes multi-head latent attention's per-head keys and
	// values of tokens into k [rows, Heads*(Nope+Rope)] and v [rows,
	// Heads*V] at rows a.Rows[i], from kv [tokens, Heads*(Nope+V)]
	// (kv_b_proj's output, per head [k_nope | v]) and kPe [tokens, Rope]
	// (the rotated key part all heads share): k's row is per head [k_nope
	// | k_pe], v's per head v. HF's DeepseekV3Attention builds the same
	// keys with k_pe.expand and torch.cat((k_nope, k_pe)). k and v are
	// the keys and values a step attends over, made for the step (the MLA
	// cache holds the latent, engine/nn mla_context.go).
	WriteMLAKV(k, v, kv, kPe Tensor, a *MLAKVArgs)
	// Attention computes softmax(q·kᵀ·scale)·v per token and head over the
	// cache tensors k [cacheRows, KVHeads*DK] and v [cacheRows, KVHeads*DV]
	// for q [tokens, Heads*DK], as AttnArgs describes (softmax in float32).
	// Out: [tokens, Heads*DV].
	Attention(q, k, v Tensor, a *AttnArgs) Tensor
	// MLAAttention is Attention for DeepSeek's multi-head latent attention
	// with the keys and values read where the layer makes them, none
	// written per head: kv [rows, Heads*(Nope+V)] is kv_b_proj's output
	// (per head [k_nope | v]) and kPe [rows, Rope] the rotated rope key
	// all heads share; head h's key at row j is [k_nope_h | kPe[j]] and its
	// value v_h (the layout WriteMLAKV writes out). q [tokens,
	// Heads*(Nope+Rope)]; out [tokens, Heads*V] (MLAAttnArgs).
	MLAAttention(q, kv, kPe Tensor, a *MLAAttnArgs) Tensor

	// MoE: routing and routed experts (moe.go).
	MoE
}

// UploadCopier is implemented by a Device whose Upload copies the host
// tensor before it returns and keeps no reference to it (the CUDA backend,
// where CopiesUploads is true). The weight loader (model.Loader) hands any
// other device (the CPU backend, whose Upload aliases aligned data; a test's
// wrapper of either) only tensors in memory of their own, never a view of a
// memory-mapped checkpoint (engine/safetensors.Detach), so that the
// device's weights neither change nor fault when the file does.
type UploadCopier interface {
	CopiesUploads() bool
}

// Comm is one rank's view of the collectives of a tensor-parallel group of
// Size ranks (NCCL's communicator; the CPU backend runs them in memory).
// Every rank of the group must call the same collectives in the same order.
// A collective panics with ErrAborted when another rank failed.
type Comm interface {
	// Rank is this rank's index in the group, 0 .. Size()-1.
	Rank() int
	// Size is the number of ranks in the group (the tensor-parallel world
	// size).
	Size() int
	// AllReduceSum returns, on every rank, a new tensor holding the
	// elementwise sum of t over all ranks (row-parallel linears,
	// vocab-parallel embedding); t itself is left as it was, so a site can
	// still show the rank's partial sum.
	AllReduceSum(t Tensor) Tensor
	// AllGatherCols returns [rows, sum of cols] on every rank: the ranks'
	// t [rows, cols_r] concatenated along columns in rank order (vLLM's
	// tensor_model_parallel_all_gather on the last dim, used for logits).
	AllGatherCols(t Tensor) Tensor
}

// DeviceError is the panic value of a failed device op: which device, which
// op and why. Err is the underlying cause (for errors.Is).
type DeviceError struct {
	Device string
	Op     string
	Err    error
}

// Error returns the message: device, op and cause.
func (e *DeviceError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Device, e.Op, e.Err) }

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *DeviceError) Unwrap() error { return e.Err }

// ErrAborted is the panic value of a collective or rendezvous interrupted
// because another rank of the group failed or the run was stopped.
var ErrAborted = fmt.Errorf("forward pass aborted")
