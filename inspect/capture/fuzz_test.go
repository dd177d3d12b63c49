package capture

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/tokenizer"
)

// FuzzReadJSONL: `capture --data` files (seeds: rows of every kind
// OpenJSONL takes, and the first lines of testdata/stories260K's
// stories200.jsonl) read with stories260K's limits (512 positions, vocab
// 512) and no tokenizer: an error naming the file, or sequences that are
// all within the limits with loss masks of their length.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"input_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "id": "a"}` + "\n" + `{"input_ids": [5], "id": 7}` + "\n\n"))
	f.Add([]byte(`{"text": "Once upon a time"}`))
	f.Add([]byte(`{"input_ids": [1, 99999]}`))
	b, err := os.ReadFile("../../testdata/stories260K/stories200.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 3)
	f.Add([]byte(lines[0] + "\n" + lines[1]))
	lim := Limits{MaxPositions: 512, Vocab: 512}
	dir := f.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzJSONLInput(t, p, data, nil, lim) })
}

// fuzzJSONLInput writes data (up to 4 KB) to p and reads it as `capture
// --data` with tok: an error names the file, or the inputs pass Check and
// every sequence has ids and a loss mask of their length; it returns the
// inputs read (nil after an error or a skipped input).
func fuzzJSONLInput(t *testing.T, p string, data []byte, tok tokenizer.Tokenizer, lim Limits) *Inputs {
	if len(data) > 1<<12 {
		return nil
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := readJSONL(p, tok, lim)
	if err != nil {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("the error does not name the file: %v", err)
		}
		return nil
	}
	if err := in.Check(lim); err != nil {
		t.Fatalf("readJSONL accepted what Check refuses: %v", err)
	}
	for _, s := range in.Seqs {
		if len(s.IDs) == 0 || len(s.IDs) > lim.MaxPositions || (s.LossMask != nil && len(s.LossMask) != len(s.IDs)) {
			t.Fatalf("sequence %q: %d ids, %d mask values", s.ID, len(s.IDs), len(s.LossMask))
		}
	}
	return in
}

// FuzzReadJSONLText: `capture --data` files read with stories260K's
// tokenizer (testdata/stories260K/tok512.bin), so that "text" rows are
// encoded (seeds: text rows with ids, escapes, control characters and a
// BOM, a mixed file, a chat row; inputs over 4 KB are skipped): the same
// contract as FuzzReadJSONL, and every id of an encoded row within the
// vocabulary of 512.
func FuzzReadJSONLText(f *testing.F) {
	f.Add([]byte(`{"text": "Once upon a time", "id": "a"}` + "\n" + `{"input_ids": [1, 2], "loss_mask": [0, 1]}`))
	f.Add([]byte("\ufeff" + `{"text": "Lily\tsaw a \u00e9 dog\n"}` + "\r\n" + `{"text": ""}`))
	f.Add([]byte(`{"conversations": [{"from": "human", "value": "hi"}], "text": "hi"}`))
	f.Add([]byte(`{"text": "a", "input_ids": [1, 3]}`))
	tok, err := tokenizer.LoadLlama2C("../../testdata/stories260K/tok512.bin")
	if err != nil {
		f.Fatal(err)
	}
	lim := Limits{MaxPositions: 512, Vocab: 512}
	p := filepath.Join(f.TempDir(), "d.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzJSONLInput(t, p, data, tok, lim)
		if in == nil {
			return
		}
		for _, s := range in.Seqs {
			for _, id := range s.IDs {
				if id < 0 || int(id) >= lim.Vocab {
					t.Fatalf("sequence %q: id %d outside the vocabulary of %d", s.ID, id, lim.Vocab)
				}
			}
		}
	})
}

// FuzzReadManifest: a dump directory's manifest.json and journal.jsonl
// (seeds: a minimal manifest and journal in the format this package
// writes, and a manifest with a path leaving the dump; inputs over 2 KB
// are skipped, as the fuzzer's minimization is quadratic in the input)
// through ReadManifest: ErrManifest
// or the file's error, or a manifest whose every sequence file is a plain
// name inside the directory (CheckSeqFileName), as the readers rely on.
func FuzzReadManifest(f *testing.F) {
	m := `{"format":"hsdb-capture-dump/1","capture":{"layers":[1]},"sequences":[{"id":"0","file":"seq_000000.safetensors","tensors":{"input_ids":{"shape":[3]}}}]}`
	j := `{"seq":{"id":"1","file":"s"}}` + "\n" + `{"replicas":{"h":{"ranks":2}}}`
	f.Add([]byte(m), []byte(j))
	f.Add([]byte(strings.Replace(m, "seq_000000.safetensors", "../../../etc/hostname", 1)), []byte(""))
	dir := f.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "hsdb-fuzz-"); err == nil {
		dir = shm // two writes an execution: on tmpfs they cost little
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	f.Fuzz(func(t *testing.T, manifest, journal []byte) {
		if len(manifest)+len(journal) > 1<<11 {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, ManifestName), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, JournalName), journal, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadManifest(dir)
		if err != nil {
			if !errors.Is(err, ErrManifest) && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		for i, r := range got.Sequences {
			if err := CheckSeqFileName(r.File); err != nil {
				t.Fatalf("sequences[%d]: accepted %v", i, err)
			}
		}
	})
}
