// Package engine loads a model (HF config.json and safetensors, or a
// llama2.c checkpoint converted on the fly) onto a backend split over N
// tensor-parallel ranks and runs forward steps on a flattened token batch
// (prefill, then decode steps against a KV cache), one goroutine per rank,
// with a hook (engine/model.Hook) that can stop all ranks together at any
// site. It also samples tokens for generation. With Options.Workers the
// ranks run in worker processes instead (engine/worker drives them through
// Workers and RemoteRank); a worker process's own engine loads one rank
// (Options.Worker) and runs it with RunStep.
//
// repl/ and inspect/ use this package and engine/model's plain types; they
// never import a backend implementation.
package engine
