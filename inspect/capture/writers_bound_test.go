package capture

import (
	"context"
	"path/filepath"
	"testing"

	"hsdb/engine"
)

// TestNegativeWriters: JobOptions{Writers: -1} (hsdb capture
// --writers -1) panicked in make(chan); it now runs with the default, and
// every sequence is written.
func TestNegativeWriters(t *testing.T) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in, err := ParseIDsList("1,2,3;1,5", LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, JobOptions{Layers: []int{1}, Out: filepath.Join(t.TempDir(), "o"), Writers: -1})
	if err != nil || res.Done != 2 {
		t.Fatalf("RunCaptureJob with Writers -1: %+v, %v; want 2 sequences done", res, err)
	}
}
