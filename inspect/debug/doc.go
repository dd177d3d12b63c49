// Package debug is the debugger core (delve's pkg/proc role): a Session over
// an *engine.Engine that holds the token batch, breakpoints and watches,
// runs forward passes in a goroutine and stops them at sites (all ranks
// together, inside engine/model.Hook.Visit), steps through sites, and answers
// questions about the tensors at a stop (statistics, values, histograms,
// top channels, rank comparison, call chain) and about the model (module
// tree, layers, ranks, memory, sites).
//
// Local wraps a Session as the in-process inspect/client.Client, adding the
// session's captures, dumps, checks, diffs and capture jobs (inspect/capture
// and inspect/check over this engine's forward pass): front ends hold only
// the Client.
//
// Every result is a plain struct of inspect/client (numbers, shapes,
// strings) that a front end prints or encodes as JSON: no backend tensor,
// device or terminal type leaves this package. It imports engine,
// engine/model, engine/tensor, inspect/stats, inspect/client,
// inspect/capture, inspect/check, engine/tokenizer (EncodeAtMost, to stop
// encoding an `input text` once it passes max_position_embeddings; TextBOS
// for `info model`), and
// engine/modelpath, engine/safetensors and engine/stories (to read the
// checkpoint's headers again for `info model`'s stored dtypes); it must not import a backend implementation, an
// architecture (engine/arch: what it needs of the TP plan it reads from the
// module tree's parameters), repl/, cmd/ or any terminal library.
package debug
