// Package fuzz holds go fuzz targets for the parsers of files hsdb reads
// from outside that live in packages other sessions own (config.json,
// tokenizers, llama2.c checkpoints). Each target feeds the parser
// arbitrary bytes and requires an error of the parser's own kind or a
// result that the rest of hsdb can use — never a panic, a hang or an
// unbounded allocation. Seeds are the smallest real inputs (each target's
// comment says which), so that the fuzzer's minimization of every new
// input, which re-runs it once per byte removed, stays cheap; inputs over
// a size cap are skipped for the same reason. The seeds run with go test;
// `go test ./fuzz -fuzz=FuzzX -fuzztime=3m` fuzzes one target (README,
// "Tests and fixtures").
package fuzz

import (
	"os"
	"path/filepath"
	"testing"
)

// scratch returns a file path in a directory of its own, reused by every
// execution of one fuzz worker (a temporary file per execution would cost
// more than most parses).
func scratch(f *testing.F, name string) string {
	dir := f.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "hsdb-fuzz-"); err == nil {
		dir = shm
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	return filepath.Join(dir, name)
}

// put writes b to path or fails the execution.
func put(t *testing.T, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedFile adds the bytes of a repository file as a seed.
func seedFile(f *testing.F, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}
