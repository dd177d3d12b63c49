package capture

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
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
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), `the fields other than sequences take more than 4194304 bytes (at "edits")`) {
		t.Fatalf("edits of %d bytes: %v (manifest read: %v); want ErrManifest naming the bound and edits", len(edits), err, m != nil)
	}
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(5*len(text)+1<<20); got > bound {
		t.Errorf("refusing a manifest of %d bytes allocated %d bytes, more than %d", len(text), got, bound)
	}
	t.Logf("refused %d bytes: %d allocated", len(text), after.TotalAlloc-before.TotalAlloc)
}

// TestManifestReplicaKeys: replicas of tiny entries ("k":{}, 7 bytes of
// the file) take some 190 bytes each once read (a map slot with the
// ReplicaRecord, the key), and a batch job's journal merges a line's
// replicas into the manifest's with no bound on the file's 2 GiB: some 50
// GB. MaxReplicaKeys + 1 of them are refused, naming the bound, from the
// manifest and from the journal alike.
func TestManifestReplicaKeys(t *testing.T) {
	var reps strings.Builder
	reps.WriteByte('{')
	for i := range MaxReplicaKeys + 1 {
		if i > 0 {
			reps.WriteByte(',')
		}
		reps.WriteString(`"` + strconv.Itoa(i) + `":{}`)
	}
	reps.WriteByte('}')
	head := `{"format":"` + ManifestFormat + `","model":{"world_size":1},`
	for _, c := range []struct{ name, manifest, journal string }{
		{"manifest", head + `"replicas":` + reps.String() + `,"sequences":[]}`, ""},
		{"journal", head + `"sequences":[]}`, `{"replicas":` + reps.String() + "}\n"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(c.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		if c.journal != "" {
			if err := os.WriteFile(filepath.Join(dir, JournalName), []byte(c.journal), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, err := ReadManifest(dir)
		if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "replicas records more than 65536 tensors") {
			t.Errorf("%s: %d replica records: %v (manifest read: %v); want ErrManifest naming 65536", c.name, MaxReplicaKeys+1, err, m != nil)
		}
	}
}
