package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine/modelpath"
	"hsdb/engine/regfile"
)

// TestPlanDirConfigNotRegular: `hsdb plan` reads config.json as the load
// does: a named pipe in its place is refused at once (PlanDir opened it and
// waited for a writer forever), and a config.json over
// modelpath.MaxConfigBytes is refused from its size, naming the bound
// (PlanDir read it whole, whatever its size).
func TestPlanDirConfigNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "config.json"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := PlanDir(dir, PlanOptions{TP: 1}); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, regfile.ErrNotRegular) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("a named pipe as config.json: %v; want ErrNotRegular naming config.json", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PlanDir still waiting on a named pipe after 10 s")
	}

	dir = t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, modelpath.MaxConfigBytes+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	if _, err := PlanDir(dir, PlanOptions{TP: 1}); !errors.Is(err, regfile.ErrTooLarge) {
		t.Errorf("a config.json of %d bytes: %v; want ErrTooLarge", modelpath.MaxConfigBytes+1, err)
	}
}
