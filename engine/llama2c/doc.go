// Package llama2c reads Andrej Karpathy's llama2.c checkpoints (the legacy
// "version 0" format that run.c reads: a 7-int32 header then float32
// arrays) and turns them into an HF-layout Llama model: config.json values
// and tensors named as HF's LlamaForCausalLM names them, with the query and
// key rows permuted from llama2.c's interleaved RoPE pairs to HF's halves.
// ReadHeader reads the header alone (the config.json it implies, the
// file's size checked against it) for what needs no weight; OpenSource
// adds the names and shapes of the tensors Read would make (a memory
// plan's weight source, each tensor read only when asked for); Read reads
// the whole checkpoint.
//
// Convert writes the result as an HF directory with engine/safetensors,
// checking tokenizer files with engine/tokenizer. The package imports those
// and engine/tensor only.
package llama2c
