// Package repl is hsdb's front end: the command table (one entry per
// command: aliases, group, usage, help, completer, func), the readline loop
// with history, completion and Ctrl-C handling, the script runner (`hsdb -x
// FILE`, `source FILE`), the text rendering of results with the lipgloss
// styles of styles.go, and `--json` output (one object per command result).
//
// It drives the debugger only through an inspect/client.Client, whose
// arguments and results are plain structs: it imports inspect/client,
// inspect/stats, engine/tensor (dtype names, shape formatting) and
// engine/regfile (opening a script: regular files only) and must
// not import the engine, inspect/debug, inspect/capture, inspect/check or
// any backend, and it never sees a device tensor. cmd/hsdb hands it the in-process client
// (debug.Local); its tests also run it on a stub client with no model.
package repl

//go:generate go run ./internal/gendoc ../README.md
