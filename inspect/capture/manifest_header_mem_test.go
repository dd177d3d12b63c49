package capture

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestManifestHeaderBound: a manifest's fields other than sequences were
// held decoded whatever their size, a list of "" (3 bytes each in the
// file, a 16-byte string header in memory) at 6 times its bytes, so a
// 2 GiB manifest held some 12 GB (and its reading allocated some 35 times
// the file). Past MaxManifestHeaderBytes they are refused, naming the
// field reached, and the refusal allocates no more than the decoder's
// buffer and the field's raw copy: json.Decoder grows its buffer to
// 2·cap+512 when full, under 4·B for a value of B bytes, and the copy is
// B (5·B + 1 MiB for the rest: the 64 KiB reader, the header).
func TestManifestHeaderBound(t *testing.T) {
	dir := t.TempDir()
	edits := strings.TrimSuffix(strings.Repeat(`"",`, MaxManifestHeaderBytes/3+1000), ",")
	text := `{"format":"` + ManifestFormat + `","model":{"world_size":1},"edits":[` + edits + `],"sequences":[]}`
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := ReadManifest(dir)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), `the fields other than sequences take more than 16777216 bytes (at "edits")`) {
		t.Fatalf("edits of %d bytes: %v (manifest read: %v); want ErrManifest naming the bound and edits", len(edits), err, m != nil)
	}
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(5*len(text)+1<<20); got > bound {
		t.Errorf("refusing a manifest of %d bytes allocated %d bytes, more than %d", len(text), got, bound)
	}
	t.Logf("refused %d bytes: %d allocated", len(text), after.TotalAlloc-before.TotalAlloc)
}
