package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsEscapeControlCharacters: a string from a file the user points
// hsdb at (here config.json's architectures and model_type) that holds a
// terminal escape sequence or a carriage return reaches the error printed
// by every command with those characters escaped (\x1b, \r); they went to
// the terminal raw, so a hostile config.json could recolour, clear or
// overwrite what hsdb printed.
func TestErrorsEscapeControlCharacters(t *testing.T) {
	dir := t.TempDir()
	cfg := `{"architectures": ["Evil\u001b[2J\rhsdb: loaded"], "model_type": "evil\u001b[31m", "hidden_size": 8}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cap := filepath.Join("..", "..", "testdata", "captures", "good.safetensors")
	for _, args := range [][]string{
		{"plan", "--model", dir},
		{"generate", "--model", dir, "--ids", "1,2"},
		{"--model", dir, "-x", os.DevNull},
		{"check", cap, "--model", dir},
	} {
		_, errs, _ := runHsdb(t, args...)
		if !strings.Contains(errs, "Evil") {
			t.Errorf("%v: stderr does not name the architecture: %q", args, errs)
		}
		if strings.ContainsAny(errs, "\x1b\r") {
			t.Errorf("%v: stderr holds raw control characters: %q", args, errs)
		}
	}
}
