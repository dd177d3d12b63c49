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
// A mapping reads the file as it is now, not as it was at Open: a file
// rewritten in place (cp over it) changes the bytes of tensors that alias
// the mapping, and one cut short makes a read of a lost page fault with
// SIGBUS, which kills a Go process. Checking the file's size or mtime
// before each use would leave a window between the check and the read, so
// readers use these instead: Copy (and the misaligned path of Tensor)
// reads under debug.SetPanicOnFault, the runtime's provision for mapped
// files, and returns ErrChanged naming the file; Detach makes a tensor that
// aliases a mapping into one of its own the same way; and ChangedError
// names the file of a fault address for a reader that converts straight
// from the mapping under the same guard (the engine's weight load). The
// engine keeps no alias of a checkpoint once loaded and unmaps it, so a
// session never depends on the file after its load: a fault guard around
// every later read could not catch a rewrite of the same size, and copying
// costs one pass over the weights a CPU device keeps anyway.
//
// This package imports only the standard library, hsdb/engine/tensor,
// hsdb/engine/regfile (files are opened only if regular, never waiting on a
// named pipe), hsdb/engine/jsonerr (JSON kinds in messages) and
// hsdb/engine/suggest (the nearest names to a missing tensor's). It must
// not import the architectures, backends, inspect/ or repl/: it is the
// bottom of the loading stack and everything above may use it.
package safetensors
