package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hsdb/engine"
)

// TestSplitCheckedBeforeSpawn: `hsdb --workers --tp 4096` on a
// model of 8 heads spawned 4096 worker processes that each refused the
// split; the front now refuses it before starting any (--tp 16 here; the spawned
// command here would leave a marker file).
func TestSplitCheckedBeforeSpawn(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "spawned")
	cfg := Config{Spawn: true, Timeout: 5 * time.Second, Command: []string{"/bin/sh", "-c", "touch " + marker}}
	_, err := Start("../../testdata/hf/llama", engine.Options{TP: 16}, cfg)
	if err == nil || !strings.Contains(err.Error(), "num_attention_heads 8 is not divisible by --tp 16") {
		t.Fatalf("Start --tp 16: %v, want the split refused", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a worker was spawned before the split was checked")
	}
}
