package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/llama2c"
)

// TestConvertedEqualsLlama2C: `hsdb convert llama2c` output, loaded through
// the safetensors path, and the embedded default give exactly the logits of
// the in-memory conversion of the same checkpoint.
func TestConvertedEqualsLlama2C(t *testing.T) { forEachDevice(t, testConvertedEqualsLlama2C) }

func testConvertedEqualsLlama2C(t *testing.T, dev string) {
	dir := filepath.Join(t.TempDir(), "stories")
	if err := llama2c.Convert(storiesBin, []string{"../testdata/stories260K/tok512.bin"}, dir, false); err != nil {
		t.Fatal(err)
	}
	if err := llama2c.Convert(storiesBin, nil, dir, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second convert without force: %v", err)
	}
	ref, err := loadStoriesOn(t, dev, 1).Prefill(prompts, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() (*Engine, error){
		func() (*Engine, error) { return Open(dir, Options{TP: 2, Device: dev}) },
		func() (*Engine, error) { return Open("", Options{Device: dev}) },
	} {
		e, err := open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Prefill(prompts, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxRelDiff(got.Values.F32(), ref.Values.F32()); d > relTol(dev) {
			t.Errorf("%s: logits rel diff %.3g", e.Path, d)
		}
		e.Close()
	}
}

// TestOpenErrors: a path that is neither a model directory nor a
// checkpoint is named with what was expected.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "nope"), Options{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing: %v", err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("empty dir: %v", err)
	}
	txt := filepath.Join(dir, "weights.txt")
	os.WriteFile(txt, []byte("x"), 0o644)
	if _, err := Open(txt, Options{}); err == nil || !strings.Contains(err.Error(), "expected a directory") {
		t.Errorf("txt: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures":["GPT2LMHeadModel"]}`), 0o644)
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("gpt2: %v", err)
	}
}
