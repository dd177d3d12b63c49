package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeRows writes a --data file whose rows are the given id lists.
func writeRows(t *testing.T, rows ...[]int) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(`{"input_ids": [`)
		for j, v := range r {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(v))
		}
		b.WriteString("]}\n")
	}
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func idsOfLen(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 1 + i%500
	}
	return ids
}

// assertRefusedBeforeWork: the capture exited 2 with want in its error and
// left neither the dump nor its staging directory.
func assertRefusedBeforeWork(t *testing.T, out, stdout, errs string, code int, want string) {
	t.Helper()
	if code != 2 || !strings.Contains(errs, want) {
		t.Fatalf("exit %d, want 2 and %q:\n%s\n%s", code, want, stdout, errs)
	}
	for _, p := range []string{out, out + ".partial"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists after a refused input (%v)", p, err)
		}
	}
}

// TestCase13RowLongerThanMaxPositions: cases/README.md case 13 — a --data
// row of 600 ids on stories260K (max_position_embeddings 512, its
// config's max_seq_len) is refused before the first batch, naming the row
// and the limit, as the REPL's `input` refuses it.
func TestCase13RowLongerThanMaxPositions(t *testing.T) {
	data := writeRows(t, idsOfLen(5), idsOfLen(600))
	out := filepath.Join(t.TempDir(), "o")
	stdout, errs, code := runHsdb(t, "capture", "--layers", "1", "--data", data, "--out", out)
	assertRefusedBeforeWork(t, out, stdout, errs, code, `d.jsonl:2 (sequence 1, id "1"): 600 tokens, more than max_position_embeddings 512`)
	_, errs, code = runHsdb(t, "capture", "--layers", "1", "--ids", "1,2;"+strings.TrimSuffix(strings.Repeat("7,", 513), ","), "--out", out)
	assertRefusedBeforeWork(t, out, "", errs, code, "--ids: sequence 1: 513 tokens, more than max_position_embeddings 512")
}

// TestCase14MillionTokenRow: case 14 — a row of 10^6 ids is refused as in
// case 13 while the file is read (no forward pass runs).
func TestCase14MillionTokenRow(t *testing.T) {
	data := writeRows(t, idsOfLen(1_000_000))
	out := filepath.Join(t.TempDir(), "o")
	stdout, errs, code := runHsdb(t, "capture", "--layers", "1", "--data", data, "--out", out)
	assertRefusedBeforeWork(t, out, stdout, errs, code, "1000000 tokens, more than max_position_embeddings 512")
}

// TestCase15OutOfVocabLastRow: case 15 — the last row holds id 99999
// (stories260K's vocab_size is 512): refused while reading --data, naming
// the row and the position, with no staging directory left.
func TestCase15OutOfVocabLastRow(t *testing.T) {
	data := writeRows(t, idsOfLen(5), idsOfLen(7), []int{1, 2, 99999})
	out := filepath.Join(t.TempDir(), "o")
	stdout, errs, code := runHsdb(t, "capture", "--layers", "1", "--data", data, "--out", out)
	assertRefusedBeforeWork(t, out, stdout, errs, code, `d.jsonl:3 (sequence 2, id "2"): input_ids[2] = 99999 is not a token id of the model (vocab_size 512)`)
}

// TestCase4CheckManifestLeaves: case 4 through the CLI — `hsdb check` of a
// dump whose manifest lists "../../../etc/hostname" refuses it (exit 2,
// the field named) and prints nothing of the file outside.
func TestCase4CheckManifestLeaves(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dump")
	if _, errs, code := runHsdb(t, "capture", "--layers", "1", "--ids", "1,2,3;1,5", "--out", out); code != 0 {
		t.Fatalf("capture: exit %d %s", code, errs)
	}
	p := filepath.Join(out, "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"file": "seq_000001.safetensors"`, `"file": "../../../etc/hostname"`, 1))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	host, _ := os.ReadFile("/etc/hostname")
	stdout, errs, code := runHsdb(t, "check", out)
	all := stdout + errs
	if code != 2 || !strings.Contains(all, `sequences[1].file: "../../../etc/hostname" is not a file name inside the dump directory`) {
		t.Fatalf("exit %d\n%s", code, all)
	}
	if h := strings.TrimSpace(string(host)); h != "" && strings.Contains(all, h) && !strings.Contains(out, h) {
		t.Fatalf("check printed the outside file's bytes:\n%s", all)
	}
}
