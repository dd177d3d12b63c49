package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReadManifestStreams: check, diff and the REPL read a dump's
// manifest.json and journal.jsonl through ReadManifest, which read each
// whole (up to 2 GiB) before decoding it, holding the file's bytes beside
// the records; the capture job streams them. Here 128 sequences in the
// manifest and 128 in the journal, each record padded with 64 KiB of
// whitespace (16 MiB of files whose records are a few KiB), are read with
// under 8 MiB allocated (runtime.MemStats.TotalAlloc: an allocation
// count, not a time; reading the files whole allocates their 16 MiB), and
// all 256 sequences come back in order, the journal's after the
// manifest's.
func TestReadManifestStreams(t *testing.T) {
	const n, pad = 128, 64 << 10
	rec := func(i int) string {
		return fmt.Sprintf(`{"id": "s%d",%s"index": %d, "length": 3, "file": "seq_%06d.safetensors", "tensors": {}}`, i, strings.Repeat(" ", pad), i, i)
	}
	var m, j bytes.Buffer
	fmt.Fprintf(&m, `{"format": %q, "model": {"world_size": 1}, "sequences": [`, ManifestFormat)
	for i := range n {
		if i > 0 {
			m.WriteString(", ")
		}
		m.WriteString(rec(i))
	}
	m.WriteString("]}\n")
	for i := n; i < 2*n; i++ {
		fmt.Fprintf(&j, `{"seq": %s}`+"\n", rec(i))
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{ManifestName: m.Bytes(), JournalName: j.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	size := m.Len() + j.Len()
	m, j = bytes.Buffer{}, bytes.Buffer{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := ReadManifest(dir)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if a := after.TotalAlloc - before.TotalAlloc; !(a < 8<<20) {
		t.Errorf("reading %d bytes of manifest and journal allocated %d bytes, want under 8 MiB", size, a)
	}
	if len(got.Sequences) != 2*n {
		t.Fatalf("%d sequences, want %d", len(got.Sequences), 2*n)
	}
	for i, r := range got.Sequences {
		if r.ID != fmt.Sprintf("s%d", i) || r.Index != i || r.File != fmt.Sprintf("seq_%06d.safetensors", i) {
			t.Fatalf("sequences[%d] = %+v, want id s%d", i, r, i)
		}
	}
}

// TestReadManifestStrictAsUnmarshal: streaming the manifest keeps what
// json.Unmarshal of the whole file refused or read: data after the
// object and a second "sequences" list are refused (Unmarshal would fail
// on the first, keep one list of the second), a "Sequences" key is read
// as sequences (Unmarshal matches keys case-insensitively), and a record
// of the wrong type is named by its index.
func TestReadManifestStrictAsUnmarshal(t *testing.T) {
	const seq = `{"id": "a", "index": 0, "length": 3, "file": "seq_000000.safetensors", "tensors": {}}`
	head := `{"format": "` + ManifestFormat + `", "model": {"world_size": 1}, `
	for _, c := range []struct {
		name, body, want string
	}{
		{"data after the object", head + `"sequences": []} {}`, "data after the manifest's object"},
		{"sequences twice", head + `"sequences": [` + seq + `], "sequences": []}`, "sequences given twice"},
		{"a record's wrong type", head + `"sequences": [` + seq + `, {"id": 7}]}`, "sequences[1]: id: got a JSON number, want a string"},
		{"Sequences", head + `"Sequences": [` + seq + `]}`, ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && len(m.Sequences) != 1:
			t.Errorf("%s: %d sequences, want 1", c.name, len(m.Sequences))
		case c.want != "" && (!errors.Is(err, ErrManifest) || !strings.Contains(fmt.Sprint(err), c.want)):
			t.Errorf("%s: %v; want ErrManifest naming %q", c.name, err, c.want)
		}
	}
}

// TestReadManifestRepeatedKeyAsUnmarshal: a header field given twice in
// two spellings ("complete", then "Complete") takes its last value, as
// json.Unmarshal of the whole file (the reference here) takes it. The
// streamed header was kept in a map and re-encoded with its keys sorted,
// so "Complete" came first and the earlier "complete" won: a staging
// directory's manifest read as complete, or a finished one as not.
func TestReadManifestRepeatedKeyAsUnmarshal(t *testing.T) {
	head := `{"format": "` + ManifestFormat + `", "model": {"world_size": 1}, "sequences": [], `
	for _, body := range []string{
		head + `"complete": false, "Complete": true}`,
		head + `"Complete": true, "complete": false}`,
		head + `"COMPLETE": false, "Complete": true}`,
	} {
		var want Manifest
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if m.Complete != want.Complete {
			t.Errorf("%s: complete %v, json.Unmarshal reads %v", body, m.Complete, want.Complete)
		}
	}
}
