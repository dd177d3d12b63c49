package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestStreamManifestHeaderAsUnmarshal: the fields beside sequences decode
// as json.Unmarshal of the whole file decodes them (the reference here,
// on the same bytes). They were gathered in a map by key and re-encoded
// in sorted order, so a key given twice in two cases resolved by the
// sort ("FORMAT" < "format": a file's later "FORMAT" lost to its earlier
// "format", where Unmarshal keeps the later), and an object given twice
// kept only the last (Unmarshal merges: world_size of the first model and
// arch of the second).
func TestStreamManifestHeaderAsUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{"format": "` + ManifestFormat + `", "FORMAT": "other", "sequences": []}`,
		`{"FORMAT": "other", "format": "` + ManifestFormat + `", "sequences": []}`,
		`{"model": {"world_size": 1}, "sequences": [], "model": {"arch": "X"}}`,
		`{"model": {"world_size": 2}, "Model": {"world_size": 1, "dims": {"a": 1}}, "MODEL": {"dims": {"b": 2}}}`,
		`{"capture": {"layers": [1, 2]}, "Capture": {"what": "w"}, "format": "a", "format": "b"}`,
	} {
		var want Manifest
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		want.Sequences = nil
		var got Manifest
		if err := streamManifest(strings.NewReader(body), &got, func(SeqRecord) error { return nil }); err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			t.Errorf("%s:\n got %s\nwant %s (json.Unmarshal)", body, a, b)
		}
	}
}

// TestReadManifestHostileMessages: a manifest cut short, empty or not an
// object is named so; before, a cut file said only "EOF" and an array
// "not a JSON object (<nil>)".
func TestReadManifestHostileMessages(t *testing.T) {
	whole := `{"format": "` + ManifestFormat + `", "model": {"world_size": 1}, "sequences": [{"id": "a", "index": 0, "length": 3, "file": "seq_000000.safetensors", "tensors": {}}]}`
	cases := map[string]string{"": "the file is empty", "[]": "not a JSON object: got a JSON array", `"x"`: "not a JSON object: got x"}
	for _, at := range []int{1, 20, 60, 90, 130, len(whole) - 2, len(whole) - 1} {
		cases[whole[:at]] = "cut short"
	}
	for body, want := range cases {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadManifest(dir)
		msg := fmt.Sprint(err)
		if !errors.Is(err, ErrManifest) || !strings.Contains(msg, want) || strings.HasSuffix(msg, "EOF") || strings.Contains(msg, "<nil>") {
			t.Errorf("%q: %v; want ErrManifest saying %q", body, err, want)
		}
	}
}

// TestReadManifestBoundsSequences: ReadManifest holds every record, about
// 95 bytes for a "{}" of 3 bytes, so a 2 GiB manifest (MaxManifestBytes)
// of "{}" records held some 68 GB; it refuses past ManifestMaxSequences
// records, the bound that MaxManifestBytes is made of, in the manifest
// and with its journal, unless the files are large enough for more real
// records (one per 256 bytes: hsdb's smallest, one layer and input_ids,
// takes about 350 compact).
func TestReadManifestBoundsSequences(t *testing.T) {
	for _, c := range []struct {
		size int64
		want int
	}{
		{0, 1 << 20},
		{1 << 28, 1 << 20},              // 256 MiB / 256 = 2^20
		{1<<28 + 256, 1<<20 + 1},        // one record more
		{1_200_000 * 350, 1_640_625},    // 1.2 M real records: 420,000,000 / 256
		{MaxManifestBytes * 2, 1 << 24}, // a 2 GiB manifest and a 2 GiB journal: 2^32 / 2^8
	} {
		if got := maxHeldSequences(c.size); got != c.want {
			t.Errorf("maxHeldSequences(%d) = %d, want %d", c.size, got, c.want)
		}
	}
	write := func(dir string, n int, journal string) {
		var b bytes.Buffer
		b.WriteString(`{"format": "` + ManifestFormat + `", "model": {"world_size": 1}, "sequences": [`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("{}")
		}
		b.WriteString("]}")
		if err := os.WriteFile(filepath.Join(dir, ManifestName), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if journal != "" {
			if err := os.WriteFile(filepath.Join(dir, JournalName), []byte(journal), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := fmt.Sprintf("more than %d sequences", ManifestMaxSequences)
	dir := t.TempDir()
	write(dir, ManifestMaxSequences+1, "")
	if _, err := ReadManifest(dir); !errors.Is(err, ErrManifest) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("%d records: %v; want ErrManifest saying %q", ManifestMaxSequences+1, err, want)
	}
	dir = t.TempDir()
	write(dir, ManifestMaxSequences, `{"seq": {"id": "x"}}`+"\n")
	if _, err := ReadManifest(dir); !errors.Is(err, ErrManifest) || !strings.Contains(fmt.Sprint(err), JournalName) || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("%d records and one in the journal: %v; want ErrManifest naming %s and saying %q", ManifestMaxSequences, err, JournalName, want)
	}
	// At the bound, the records are read (and refused for what they
	// hold: sequences[0].file is empty), not for their count.
	dir = t.TempDir()
	write(dir, ManifestMaxSequences, "")
	if _, err := ReadManifest(dir); err == nil || strings.Contains(fmt.Sprint(err), "more than") || !strings.Contains(fmt.Sprint(err), "sequences[0].file") {
		t.Errorf("%d records: %v; want sequences[0].file refused", ManifestMaxSequences, err)
	}
}
