package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSpeculatorsEmbeddingsID: a speculators file with ids 0,1,2,3
// (id 0 the embeddings, id k hsdb layer k-1's output: README) was
// described as "4 entries, labelled 0,1,2: hsdb layers = speculators ids
// 0,1,2,3", three labels set equal to four ids, as if layer 0 were id 0.
// By that definition the note now pairs hsdb layers 0,1,2 with ids 1,2,3
// and names id 0 as the embeddings, with --layers and without.
func TestCheckSpeculatorsEmbeddingsID(t *testing.T) {
	const model = "../../testdata/hf/llama"
	dir := filepath.Join(t.TempDir(), "hs")
	if out, errs, code := runHsdb(t, "capture", "--model", model, "--format", "speculators", "--layers", "0,1,2,3", "--ids", "1,5,6,7", "--out", dir); code != 0 {
		t.Fatalf("capture: exit %d\n%s\n%s", code, out, errs)
	}
	file := filepath.Join(dir, "hs_0.safetensors")
	out, _, _ := runHsdb(t, "check", file, "--model", model)
	if want := "labelled 0,1,2: hsdb layers = speculators ids 1,2,3; speculators id 0 is the embeddings, no hsdb layer)"; !strings.Contains(out, want) || strings.Contains(out, "speculators ids 0,1,2,3") {
		t.Errorf("no --layers: want %q in\n%s", want, out)
	}
	out, _, code := runHsdb(t, "check", file, "--model", model, "--layers", "0,1,2")
	if want := "3 layers: 0,1,2 (hsdb layers = speculators ids 1,2,3; speculators id 0 is the embeddings, no hsdb layer)"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("--layers 0,1,2: exit %d, want %q in\n%s", code, want, out)
	}
}
