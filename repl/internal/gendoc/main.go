// Command gendoc rewrites the command reference of README.md (the text
// between <!-- commands:begin --> and <!-- commands:end -->) from the REPL's
// command table: go generate ./repl. The new README is written to a
// temporary file beside it, fsynced, read back and compared, then renamed
// over it, so an interrupted run leaves the old README whole.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

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
	if err := replace(path, []byte(out)); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

// replace writes data to a temporary file in path's directory, fsyncs it,
// reads it back, and renames it over path when it reads back as written;
// errors name path (the temporary file is removed).
func replace(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	back, err := os.ReadFile(tmp)
	if err != nil {
		return fmt.Errorf("reading back %s: %w", tmp, err)
	}
	if !bytes.Equal(back, data) {
		return fmt.Errorf("%s reads back as %d bytes that differ from the %d written; %s is unchanged", tmp, len(back), len(data), path)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
