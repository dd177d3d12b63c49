// Package safetensors reads and writes the safetensors checkpoint format of
// Hugging Face (https://github.com/huggingface/safetensors): an 8-byte
// little-endian u64 header length N, N bytes of JSON header
//
//	{"NAME": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]},
//	 "__metadata__": {"key": "value"}}
//
// and then the data area, where each tensor occupies bytes [begin, end)
// counted from the start of the data area, row-major and little-endian.
//
// Open memory-maps one file and validates it as strictly as the reference
// Rust crate (safetensors/src/tensor.rs, SafeTensors::read_metadata and
// Metadata::validate): every violation is a distinct sentinel error (ErrTooShort,
// ErrHeaderJSON, ErrSizeMismatch, ErrOverlap, ...) wrapped in a message that
// names the file and the tensor. Tensors are returned zero-copy where the
// mapping is aligned to the element size. OpenDir and OpenIndex read sharded
// checkpoints (model.safetensors.index.json and its shards, as written by
// transformers' save_pretrained) and open shards lazily, so loading three
// layers of a 61-layer model maps only the shards that hold them. Write and
// WriteFile produce files byte-compatible with the Python library; WriteFile
// is atomic (temporary file, fsync, re-read and compare, rename, fsync of the
// directory).
//
// This package imports only the standard library, hsdb/engine/tensor,
// hsdb/engine/regfile (files are opened only if regular, never waiting on a
// named pipe) and hsdb/engine/jsonerr (JSON kinds in messages). It must not import the architectures, backends, inspect/ or
// repl/: it is the bottom of the loading stack and everything above may use
// it.
package safetensors
