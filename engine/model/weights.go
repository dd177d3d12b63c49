package model

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// WeightSource is where a checkpoint's tensors come from: a safetensors file
// or directory (engine/safetensors), or an in-memory map in tests. Tensors
// may alias a memory mapping and must not be modified.
type WeightSource interface {
	// Meta returns a tensor's dtype and shape without reading it.
	Meta(name string) (dt tensor.DType, shape []int, ok bool)
	// Tensor returns the named tensor; an error names the source and tensor.
	Tensor(name string) (*tensor.Tensor, error)
}

// ErrWeight is wrapped by every weight-loading error (missing tensor, wrong
// shape or dtype).
var ErrWeight = errors.New("weight")

// LoadReport collects what loading did: linear weights the checkpoint
// stores quantized, tensors in the checkpoint that were not used, bytes
// uploaded.
type LoadReport struct {
	// Dequantized lists the linear weights (HF names) that the checkpoint
	// stores quantized and that were loaded through the QuantScheme (and
	// dequantized on devices that compute on dense weights, as the CPU
	// backend does); Format names the scheme (QuantScheme.String).
	Dequantized []string
	Format      string
	// Formats holds each Dequantized weight's storage format
	// (tensor.QuantFormat.String: "fp8_block", "int4_group"), index for
	// index.
	Formats []string
	// Unused lists checkpoint tensors the model never reads (a multimodal
	// wrapper's vision tower, DeepSeek-V3's multi-token-prediction layer),
	// when the architecture can tell; filled by rank 0's load.
	Unused []string
	Bytes  int64
}

// Loader fetches one rank's weights from a WeightSource by HF tensor name,
// checks each against the shape the architecture expects, slices the rank's
// shard, converts to the wanted dtype and uploads it to the device. Paths are
// built as candle's VarBuilder does: l.Pp("model").Pp("layers").Pp("3").
// The first error is kept and every later call returns nil; callers check
// Err() once at the end (so one missing tensor gives one clear message).
type Loader struct {
	Src         WeightSource
	Dev         backend.Device
	Rank, World int
	// DType converts weights on load (Invalid keeps the stored dtype;
	// quantized weights a device dequantizes become float32).
	DType tensor.DType
	// Quant, when set, is how the checkpoint stores its quantized linear
	// weights (config.json's quantization_config, engine/quant); Linear
	// loads through it.
	Quant  QuantScheme
	Report *LoadReport
	// Stage, when set, is the pipeline stage being loaded: its ends are
	// loaded only as StageEnds says (the embedding on the first stage,
	// the final norm and LM head on the last).
	Stage *StageEnds
	// Detach, when set, is applied to every tensor bound for a device
	// that may keep the host tensors it is given (any but a
	// backend.UploadCopier: the CPU backend aliases them) just before
	// Upload: it returns the tensor in memory of
	// its own when it is a view of the checkpoint's memory mapping
	// (engine/safetensors.Detach), so that nothing the device holds
	// depends on the file after the load. Its error names the file.
	Detach func(*tensor.Tensor) (*tensor.Tensor, error)

	prefix string
	err    *error
}

// NewLoader returns a loader for one rank.
func NewLoader(src WeightSource, dev backend.Device, rank, world int, dt tensor.DType) *Loader {
	var err error
	return &Loader{Src: src, Dev: dev, Rank: rank, World: world, DType: dt, Report: &LoadReport{}, err: &err}
}

// Pp returns a loader whose names are prefixed with p (joined by ".").
func (l *Loader) Pp(p string) *Loader {
	c := *l
	if c.prefix == "" {
		c.prefix = p
	} else {
		c.prefix = c.prefix + "." + p
	}
	return &c
}

// At returns a loader whose names are prefixed with prefix instead (a
// multimodal wrapper's "language_model.model" where the module path says
// "model").
func (l *Loader) At(prefix string) *Loader {
	c := *l
	c.prefix = prefix
	return &c
}

// PpI is Pp with an integer component (a layer index).
func (l *Loader) PpI(i int) *Loader { return l.Pp(strconv.Itoa(i)) }

// Err returns the first error of any load through this loader or its
// prefixed copies.
func (l *Loader) Err() error { return *l.err }

// Fail records err (if it is the first) and returns nil.
func (l *Loader) Fail(err error) backend.Tensor {
	if *l.err == nil {
		*l.err = err
	}
	return nil
}

// Name returns the full tensor name for n under the loader's prefix.
func (l *Loader) Name(n string) string {
	if l.prefix == "" {
		return n
	}
	return l.prefix + "." + n
}

// otherPrefix returns, for a missing tensor name, a note naming the same
// tensor under another of the layouts checkpoints keep a language model
// in (LMLayouts: plain "model.layers.0..." and "lm_head.weight", a
// multimodal wrapper's "language_model." before them as Kimi-K2.5,
// transformers 5's "model.language_model.layers.0...", or
// "language_model.layers.0...") when the checkpoint holds it there (""
// when it does not). A checkpoint whose tensors mix two layouts (one
// shard re-exported without the wrapper) read as "missing" with no hint
// that the tensor was there under another name.
func (l *Loader) otherPrefix(name string) string {
	alts := CheckpointNames(PlainName(name))
	for _, alt := range alts {
		if alt == name {
			continue
		}
		if _, _, ok := l.Src.Meta(alt); ok {
			return fmt.Sprintf("; the checkpoint holds %s, the same tensor under another prefix: its tensors mix two layouts (keep one)", alt)
		}
	}
	return ""
}

// Has reports whether the checkpoint holds n (under the prefix).
func (l *Loader) Has(n string) bool {
	_, _, ok := l.Src.Meta(l.Name(n))
	return ok
}

// MissingTensor is the error, wrapping ErrWeight, for a tensor name the
// checkpoint does not hold that the model needs at shape shape: "weight:
// tensor model.norm.weight is missing from the checkpoint (expected shape
// [96])", the Loader's words, which engine/plan's header checks give too.
func MissingTensor(name string, shape []int) error {
	return fmt.Errorf("%w: tensor %s is missing from the checkpoint (expected shape %s)", ErrWeight, name, tensor.ShapeString(shape))
}

func (l *Loader) fetch(n string, shape []int) *tensor.Tensor {
	if *l.err != nil {
		return nil
	}
	name := l.Name(n)
	_, got, ok := l.Src.Meta(name)
	if !ok {
		if me, ok := l.Src.(interface{ MetaErr(string) error }); ok {
			if err := me.MetaErr(name); err != nil {
				l.Fail(fmt.Errorf("%w: tensor %s (expected shape %v): %w", ErrWeight, name, tensor.ShapeString(shape), err))
				return nil
			}
		}
		if _, _, packed := l.Src.Meta(name + "_packed"); packed && l.Quant == nil {
			// compressed-tensors keeps M.weight as M.weight_packed (with
			// weight_scale and weight_shape): a config.json that lost its
			// quantization_config reads as if the weight were missing.
			l.Fail(fmt.Errorf("%w: tensor %s is stored packed as %s_packed (compressed-tensors int4) but config.json has no quantization_config to unpack it (expected shape %v)", ErrWeight, name, name, tensor.ShapeString(shape)))
			return nil
		}
		l.Fail(fmt.Errorf("%w%s", MissingTensor(name, shape), l.otherPrefix(name)))
		return nil
	}
	if !slices.Equal(got, shape) {
		l.Fail(fmt.Errorf("%w: tensor %s has shape %s in the checkpoint, the config implies %s", ErrWeight, name, tensor.ShapeString(got), tensor.ShapeString(shape)))
		return nil
	}
	t, err := l.Src.Tensor(name)
	if err != nil {
		l.Fail(fmt.Errorf("%w: %w", ErrWeight, err))
		return nil
	}
	if t.DType == tensor.F8E4M3 {
		if l.Quant == nil {
			l.Fail(fmt.Errorf("%w: tensor %s is fp8 but the config has no quantization_config to dequantize it", ErrWeight, name))
		} else {
			l.Fail(fmt.Errorf("%w: tensor %s is fp8 but is not a linear weight (%s quantizes linear weights only)", ErrWeight, name, l.Quant))
		}
		return nil
	}
	if !t.DType.IsFloat() {
		l.Fail(fmt.Errorf("%w: tensor %s has dtype %s, a float dtype was expected", ErrWeight, name, t.DType))
		return nil
	}
	return t
}

// finish converts t, tensor name (or a shard of it), to the loader's dtype
// and uploads it.
func (l *Loader) finish(name string, t *tensor.Tensor) backend.Tensor {
	if t == nil {
		return nil
	}
	want := l.DType
	if want == tensor.Invalid {
		want = t.DType
		if want == tensor.F64 || want == tensor.F8E4M3 {
			want = tensor.F32
		}
	}
	if want != t.DType {
		c := t.Convert(want)
		if i := narrowOverflow(t, c); i >= 0 {
			return l.Fail(overflowError(name, t.Shape, i, t.At(i), want))
		}
		t = c
	}
	if uc, ok := l.Dev.(backend.UploadCopier); l.Detach != nil && !(ok && uc.CopiesUploads()) {
		d, err := l.Detach(t)
		if err != nil {
			return l.Fail(fmt.Errorf("%w: tensor %s: %w", ErrWeight, name, err))
		}
		t = d
	}
	l.Report.Bytes += int64(len(t.Data))
	return l.Dev.Upload(t)
}

// Full loads tensor n, replicated on every rank, checking its shape.
func (l *Loader) Full(n string, shape ...int) backend.Tensor {
	return l.finish(l.Name(n), l.fetch(n, shape))
}

// Rows loads rows [r0, r1) of tensor n of full shape `shape` (the output
// features of a column-parallel linear, a vocab shard of an embedding). Rows
// past the end of the tensor (vocab padding) are zero.
func (l *Loader) Rows(n string, shape []int, r0, r1 int) backend.Tensor {
	if rv, ok := l.Src.(rowViewer); ok && r1 <= shape[0] && *l.err == nil {
		if dt, got, ok := l.Src.Meta(l.Name(n)); ok && slices.Equal(got, shape) && dt != tensor.F8E4M3 {
			t, err := rv.RowsView(l.Name(n), r0, r1)
			if err != nil {
				return l.Fail(fmt.Errorf("%w: %w", ErrWeight, err))
			}
			if !t.DType.IsFloat() {
				return l.Fail(fmt.Errorf("%w: tensor %s has dtype %s, a float dtype was expected", ErrWeight, l.Name(n), t.DType))
			}
			return l.finish(l.Name(n), t)
		}
	}
	t := l.fetch(n, shape)
	if t == nil {
		return nil
	}
	if r1 <= t.Rows() {
		return l.finish(l.Name(n), t.SliceRows(r0, r1))
	}
	out := tensor.New(t.DType, append([]int{r1 - r0}, t.Shape[1:]...)...)
	if r0 < t.Rows() {
		copy(out.Data, t.SliceRows(r0, t.Rows()).Data)
	}
	return l.finish(l.Name(n), out)
}

// Cols loads columns [c0, c1) of the last dimension of 2-D tensor n (the
// input features of a row-parallel linear); it copies unless the range is
// the whole tensor.
func (l *Loader) Cols(n string, shape []int, c0, c1 int) backend.Tensor {
	t := l.fetch(n, shape)
	if t == nil {
		return nil
	}
	return l.finish(l.Name(n), sliceCols(t, c0, c1))
}

// sliceCols returns columns [c0, c1) of 2-D t: t itself when that is the
// whole tensor (one rank, no copy), else a copy.
func sliceCols(t *tensor.Tensor, c0, c1 int) *tensor.Tensor {
	rows, cols, es := t.Rows(), t.Cols(), t.DType.Size()
	if c0 == 0 && c1 == cols {
		return t
	}
	out := tensor.New(t.DType, rows, c1-c0)
	for r := range rows {
		copy(out.Data[r*(c1-c0)*es:(r+1)*(c1-c0)*es], t.Data[(r*cols+c0)*es:(r*cols+c1)*es])
	}
	return out
}

// RowBlocks loads the concatenation of row ranges of tensor n (a rank's
// heads when they are not contiguous, e.g. a replicated kv head).
func (l *Loader) RowBlocks(n string, shape []int, ranges [][2]int) backend.Tensor {
	t := l.fetch(n, shape)
	if t == nil {
		return nil
	}
	total := 0
	for _, r := range ranges {
		total += r[1] - r[0]
	}
	rb := t.Cols() * t.DType.Size()
	out := tensor.New(t.DType, append([]int{total}, t.Shape[1:]...)...)
	off := 0
	for _, r := range ranges {
		copy(out.Data[off*rb:], t.Data[r[0]*rb:r[1]*rb])
		off += r[1] - r[0]
	}
	return l.finish(l.Name(n), out)
}

// rowViewer is a WeightSource that can hand out a block of rows without
// reading the rest of the tensor (engine/safetensors sources).
type rowViewer interface {
	RowsView(name string, a, b int) (*tensor.Tensor, error)
}
