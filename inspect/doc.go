// Package inspect is the debugger layer above the engine; its code lives in
// the packages below it, from the bottom up:
//
//   - inspect/stats: statistics of host tensors (the library the debugger
//     and the capture tools compute with).
//   - inspect/capture: recording tensors during passes, dumps and their
//     manifests, the capture job, the validation rule names.
//   - inspect/client: the Client interface front ends hold, with its plain
//     argument and result types (delve's service.Client and service/api).
//   - inspect/check: reading anyone's capture files, validating them,
//     shape forensics and layer matching (check and diff).
//   - inspect/debug: the debugger core (delve's pkg/proc role): sessions,
//     breakpoints, stepping, queries at a stop; Local, the in-process
//     Client.
//
// Each may import the engine layer (engine/...) and the packages listed
// before it, never one after it, nor repl/ or cmd/. Nothing under engine/
// imports inspect.
package inspect
