// Package check is `hsdb check` and `hsdb diff`: CheckPath reads anyone's
// capture files (hsdb dumps, safetensors, torch.save archives through an
// allowlisted unpickler that never runs pickled code), applies design.md's
// validation rules, explains wrong shapes in the model's terms
// (ExplainWidth, from config.json alone) and, given a capture.Target, runs
// the model on the file's input_ids to name what each tensor really is
// (Match) and where it departs (Departure).
//
// It imports engine/model, engine/tensor, engine/safetensors,
// inspect/stats (Cosine), inspect/capture (the manifest, rule names and
// Target it shares with dumps) and inspect/client (the plain report a
// front end gets: PathReport.Report). It must not import
// the engine driver, a backend, inspect/debug, repl/ or cmd/.
package check
