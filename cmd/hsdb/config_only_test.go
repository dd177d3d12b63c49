package main

import (
	"os"
	"path/filepath"
	"testing"
)

// configOnlyDir returns a temporary model directory holding only the
// config.json of testdata/hf/FIXTURE (no weights, no tokenizer): what the
// checks hsdb makes before a model loads read, and where a load fails.
func configOnlyDir(t *testing.T, fixture string) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join("../../testdata/hf", fixture, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
