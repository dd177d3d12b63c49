package safetensors

import "hsdb/engine/tensor"

// Source is what a single File and a sharded Set have in common, so that a
// weight loader can take either: tensors by HF name, whole or as a block of
// rows (a column-parallel shard), with the bytes handed out counted.
type Source interface {
	// Names lists every tensor name (see File.Names and Set.Names for order).
	Names() []string
	// Info describes a tensor: dtype, shape, byte offsets.
	Info(name string) (TensorInfo, bool)
	// Lookup is Info with an ErrNoTensor (or shard-open) error.
	Lookup(name string) (TensorInfo, error)
	// Tensor returns a whole tensor, zero-copy where aligned.
	Tensor(name string) (*tensor.Tensor, error)
	// RowsView returns rows [a, b) of the first dimension.
	RowsView(name string, a, b int) (*tensor.Tensor, error)
	// BytesRead is the total size of tensors and rows handed out.
	BytesRead() int64
	// Metadata is the file's __metadata__ or the index's metadata.
	Metadata() map[string]string
	// Close unmaps everything opened.
	Close() error
}

var (
	_ Source = (*File)(nil)
	_ Source = (*Set)(nil)
)
