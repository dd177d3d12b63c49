package safetensors

import (
	"errors"
	"fmt"
	"strings"

	"hsdb/engine/suggest"
)

// Sentinel errors. Every error this package returns wraps exactly one of them
// (test with errors.Is) inside a message naming the file, and where there is
// one the tensor, with what was expected and what was found. The conditions
// follow the Rust crate's SafeTensorError (HeaderTooSmall, HeaderTooLarge,
// InvalidHeaderLength, InvalidHeaderDeserialization, TensorInvalidInfo,
// InvalidOffset, MetadataIncompleteBuffer, ValidationOverflow), split finer so
// that a caller can tell them apart.
var (
	// ErrTooShort: the file is shorter than the 8-byte header length prefix.
	ErrTooShort = errors.New("file shorter than 8 bytes")
	// ErrHeaderLength: the header length runs past the end of the file.
	ErrHeaderLength = errors.New("header length beyond end of file")
	// ErrHeaderTooLarge: the header length exceeds MaxHeaderSize.
	ErrHeaderTooLarge = errors.New("header too large")
	// ErrHeaderJSON: the header is not valid UTF-8 JSON (a single value,
	// optionally padded with whitespace).
	ErrHeaderJSON = errors.New("header is not valid JSON")
	// ErrHeaderNotObject: the header is valid JSON but not an object.
	ErrHeaderNotObject = errors.New("header is not a JSON object")
	// ErrTensorEntry: a tensor entry is not an object, lacks dtype, shape or
	// data_offsets, or has one of the wrong JSON type (dtype a string, shape
	// an array of at most MaxDims integers, data_offsets an array of two
	// integers).
	ErrTensorEntry = errors.New("malformed tensor entry")
	// ErrMetadata: __metadata__ is not an object of string values.
	ErrMetadata = errors.New("__metadata__ is not a map of strings")
	// ErrDuplicateName: a tensor name appears twice in one header, or twice
	// in the list given to Write.
	ErrDuplicateName = errors.New("duplicate tensor name")
	// ErrUnknownDType: the dtype string is not one tensor.FromSafetensors knows.
	ErrUnknownDType = errors.New("unknown dtype")
	// ErrBadShape: a dimension is negative, or product(shape) × element size
	// overflows int64.
	ErrBadShape = errors.New("invalid shape")
	// ErrSizeMismatch: product(shape) × element size != end − begin.
	ErrSizeMismatch = errors.New("shape and dtype do not match data_offsets")
	// ErrBadOffsets: begin > end, or an offset is negative.
	ErrBadOffsets = errors.New("invalid data_offsets")
	// ErrOutOfRange: a tensor's range ends beyond the data area.
	ErrOutOfRange = errors.New("data_offsets outside the data area")
	// ErrOverlap: two tensors' byte ranges overlap.
	ErrOverlap = errors.New("tensor ranges overlap")
	// ErrHole: bytes of the data area before a tensor belong to no tensor
	// (the crate's InvalidOffset: each tensor must start where the previous
	// one, in offset order, ended; the first at 0).
	ErrHole = errors.New("hole in the data area")
	// ErrIncomplete: the data area is longer than the last tensor's end (the
	// crate's MetadataIncompleteBuffer: the last offset must be the end of
	// the file).
	ErrIncomplete = errors.New("data area not fully covered")
	// ErrNoTensor: the requested tensor is not in the file or set.
	ErrNoTensor = errors.New("no such tensor")
	// ErrRowRange: RowsView was asked for rows outside [0, shape[0]], with
	// a > b, or of a scalar.
	ErrRowRange = errors.New("row range out of bounds")
	// ErrClosed: the File was used after Close.
	ErrClosed = errors.New("file is closed")

	// ErrIndex: a model.safetensors.index.json is not valid JSON, has no
	// weight_map object, or maps a tensor to something other than a local
	// file name.
	ErrIndex = errors.New("invalid safetensors index")
	// ErrShardMissing: the index names a shard file that does not exist.
	ErrShardMissing = errors.New("shard file named by index does not exist")
	// ErrShardUnreadable: the index names a shard that is there but is no
	// file hsdb can open: a directory, named pipe or device, a symbolic
	// link loop, a file it lacks permission to read.
	ErrShardUnreadable = errors.New("shard named by index is not a readable file")
	// ErrIndexMismatch: the index places a tensor in a shard that lacks it
	// (checked when that shard is first opened).
	ErrIndexMismatch = errors.New("index names a tensor its shard lacks")
	// ErrIndexUnlisted: a shard holds a tensor the index does not list
	// (checked when that shard is first opened). transformers and vLLM
	// load every tensor of the shards an index names, so the tensor is
	// part of the model for them; hsdb finds tensors through the index
	// and would take it for absent.
	ErrIndexUnlisted = errors.New("shard holds a tensor the index does not list")
	// ErrDuplicateTensor: without an index, the same tensor name is in two
	// files of a directory.
	ErrDuplicateTensor = errors.New("tensor in more than one file")
	// ErrEmptyDir: a directory holds no *.safetensors file.
	ErrEmptyDir = errors.New("empty checkpoint directory")

	// ErrBadTensor: a tensor given to Write is nil, has an invalid dtype, a
	// negative dimension, an empty or reserved name, or Data whose length is
	// not product(Shape) × DType.Size().
	ErrBadTensor = errors.New("invalid tensor for writing")
	// ErrDiskFull: a write failed with ENOSPC (no space left on device).
	ErrDiskFull = errors.New("disk full (ENOSPC)")
	// ErrVerify: WriteFile re-read the temporary file and it differs from
	// what was written.
	ErrVerify = errors.New("written file does not read back identically")
)

// noTensorError builds the ErrNoTensor message for name missing from where
// (a file, an index or a directory), with the three nearest names as a
// hint (suggest.Nearest).
func noTensorError(where, name string, names []string) error {
	hint := ""
	if c := suggest.Nearest(name, names, 3); len(c) > 0 {
		q := make([]string, len(c))
		for i, n := range c {
			q[i] = fmt.Sprintf("%q", n)
		}
		hint = " (closest: " + strings.Join(q, ", ") + ")"
	}
	return fmt.Errorf("%s: tensor %q: %w%s", where, name, ErrNoTensor, hint)
}
