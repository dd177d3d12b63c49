package debug

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/inspect/client"
)

// TestPatchRefusesChangedDump: `patch` and `compare` read a dump's files
// against its manifest.json (each tensor's dtype, shape and sha256): a
// file changed after the dump was written is refused naming the file, the
// tensor and what changed. Before, a NaN written into hidden_states.2 was
// grafted into the pass (and compared against) as if the dump held it.
// The unchanged dump still patches.
func TestPatchRefusesChangedDump(t *testing.T) {
	s, l := twoSeqRun(t)
	dir := filepath.Join(t.TempDir(), "d")
	m, err := l.Dump(dir, client.DumpRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	if _, err := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1}); err != nil {
		t.Fatalf("patch from the dump as written: %v", err)
	}

	// Rewrite sequence 1's file with a NaN in hidden_states.2, the manifest
	// left as it was.
	p := filepath.Join(dir, m.Sequences[1].File)
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var named []safetensors.Named
	for _, n := range f.Names() {
		x, err := f.Copy(n)
		if err != nil {
			t.Fatal(err)
		}
		if n == "hidden_states.2" {
			x.F32()[5] = float32(math.NaN())
		}
		named = append(named, safetensors.Named{Name: n, T: x})
	}
	f.Close()
	if err := safetensors.WriteFile(p, named, nil); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	want := p + ": hidden_states.2's sha256 differs from the one the dump's manifest.json records: the file changed after the dump was written"
	if _, err := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("patch from the changed dump: %v\nwant %s", err, want)
	}
	if _, err := s.Compare(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("compare with the changed dump: %v\nwant %s", err, want)
	}
}
