package safetensors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestCopyOfFileTruncatedAfterOpen: a file cut short after Open mapped it
// (`cp new.safetensors old.safetensors` rewrites the file in place while
// hsdb check reads it) gives ErrChanged naming the file and the tensor
// from Copy; reading the mapping past the new end raised SIGBUS, and the
// process died with "unexpected fault address" instead of an error. A
// file left whole copies exactly.
func TestCopyOfFileTruncatedAfterOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.safetensors")
	want := make([]float32, 1<<16)
	for i := range want {
		want[i] = float32(i)
	}
	if err := WriteFile(p, []Named{{Name: "hidden_states.1", T: tensor.FromF32(want, 1<<8, 1<<8)}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Copy("hidden_states.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.F32()) != len(want) {
		t.Fatalf("Copy gave %d values, want %d", len(got.F32()), len(want))
	}
	for i, v := range got.F32() {
		if v != want[i] {
			t.Fatalf("element %d = %v, want %v", i, v, want[i])
		}
	}
	if err := os.Truncate(p, 100); err != nil {
		t.Fatal(err)
	}
	_, err = f.Copy("hidden_states.1")
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "hidden_states.1") {
		t.Fatalf("Copy after truncation = %v, want ErrChanged naming %s and hidden_states.1", err, p)
	}
}
