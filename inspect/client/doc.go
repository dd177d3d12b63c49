// Package client is the seam between hsdb's front ends (repl/, cmd/hsdb)
// and the debugger, after delve's service.Client and service/api: the
// Client interface, and the plain types of its arguments and results
// (stops, tensor reports, model and rank information, breakpoints,
// capture lists, check reports), the argument parsers a front end needs
// (ParseRange, ParseIndex, ParseIDs, ParseLayers) and the sentinel errors
// callers test with errors.Is. inspect/debug.Local implements it in
// process; the rank-workers issue puts a process boundary behind it.
//
// It imports inspect/stats (the statistics inside reports) and
// inspect/capture (design.md's manifest and capture-job types, aliased);
// it must not import the engine, a backend, inspect/check, inspect/debug,
// repl/ or cmd/, so that a front end links no model code through it.
package client
