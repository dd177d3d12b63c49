package capture

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/regfile"
)

// TestManifestBoundDerivation: the bound on manifest.json is what its doc
// comment derives, 2 KiB × 1 Mi sequences = 2147483648 bytes (not 4 GiB),
// and a large real record (a 64-character id, index and length of 7
// digits, six tensors of shape [131072, 7168] with their sha256) fits in
// ManifestSeqRecordBytes both as manifest.json indents it and as a
// journal line.
func TestManifestBoundDerivation(t *testing.T) {
	if MaxManifestBytes != 2147483648 {
		t.Errorf("MaxManifestBytes is %d, want 2048 × 1048576 = 2147483648", MaxManifestBytes)
	}
	r := SeqRecord{ID: strings.Repeat("x", 64), Index: 1048575, Length: 1048575, File: "seq_01048575.safetensors", LossMask: true,
		Tensors: map[string]TensorRecord{}, Validated: true, FileSHA256: strings.Repeat("0", 64), Bytes: 1 << 40}
	for _, name := range []string{"hidden_states.2", "hidden_states.30", "hidden_states.57", "hidden_states.60", "input_ids", "loss_mask"} {
		r.Tensors[name] = TensorRecord{Shape: []int{131072, 7168}, DType: "BF16", SHA256: strings.Repeat("f", 64)}
	}
	empty, _ := json.MarshalIndent(Manifest{}, "", "  ")
	one, _ := json.MarshalIndent(Manifest{Sequences: []SeqRecord{r}}, "", "  ")
	line, _ := json.Marshal(journalEntry{Seq: &r})
	if n := len(one) - len(empty); !(n <= ManifestSeqRecordBytes) {
		t.Errorf("a six-tensor record takes %d bytes in manifest.json, more than ManifestSeqRecordBytes %d", n, ManifestSeqRecordBytes)
	}
	if n := len(line) + 1; !(n <= ManifestSeqRecordBytes) {
		t.Errorf("a six-tensor record takes %d bytes in the journal, more than ManifestSeqRecordBytes %d", n, ManifestSeqRecordBytes)
	}
}

// TestManifestTooLarge: a manifest.json, or a journal beside a valid
// manifest, one byte over the bound (a sparse file: nothing is written or
// read) is refused with regfile.ErrTooLarge naming the file, its size
// (2147483649 bytes) and the bound.
func TestManifestTooLarge(t *testing.T) {
	for _, name := range []string{ManifestName, JournalName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if name == JournalName {
				m := `{"format":"` + ManifestFormat + `","model":{"world_size":1,"dims":{"hidden_size":4}},"sequences":[]}`
				if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(m), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(dir, name)
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(2147483649); err != nil {
				f.Close()
				t.Skipf("no sparse file of 2 GiB here: %v", err)
			}
			f.Close()
			_, err = ReadManifest(dir)
			if err == nil {
				t.Fatal("ReadManifest read a file over the bound")
			}
			msg := err.Error()
			for _, want := range []string{p, "2147483649 bytes", "2147483648", "1048576 sequences", "2048 bytes"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if name == ManifestName && !errors.Is(err, regfile.ErrTooLarge) {
				t.Errorf("the error is not regfile.ErrTooLarge: %v", err)
			}
		})
	}
}
