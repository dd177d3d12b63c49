// Command gendoc rewrites the command reference of README.md (the text
// between <!-- commands:begin --> and <!-- commands:end -->) from the REPL's
// command table: go generate ./repl.
package main

import (
	"fmt"
	"os"

	"hsdb/repl"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc README.md")
		os.Exit(2)
	}
	path := os.Args[1]
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := repl.SpliceReference(string(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, path+":", err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
