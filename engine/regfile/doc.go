// Package regfile opens the files hsdb reads from directories it does not
// control (a model directory, a dump, a capture directory) so that a hostile
// entry cannot hang or exhaust it: only regular files are read, a named
// pipe is refused without blocking on its open (which otherwise waits for a
// writer forever, and SIGTERM cannot interrupt), and whole-file reads are
// bounded. It imports only the standard library; every reader of such
// files (engine/safetensors, engine/load, inspect/capture, inspect/check)
// goes through it.
package regfile
