// Package repl is hsdb's front end: the command table (one entry per
// command: aliases, group, usage, help, completer, func), the readline loop
// with history, completion and Ctrl-C handling, the script runner (`hsdb -x
// FILE`, `source FILE`), the text rendering of results with the lipgloss
// styles of styles.go, and `--json` output (one object per command result).
//
// It drives the model only through inspect/debug's Session, whose results
// are plain structs: it must not import engine/backend or any backend
// implementation, and it never sees a device tensor.
package repl

//go:generate go run ./internal/gendoc ../README.md
