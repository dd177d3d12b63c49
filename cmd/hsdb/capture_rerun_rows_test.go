package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureRerunRowsNotCovered: a finished dump whose manifest lists
// the job's count of sequences, every file intact, but not one per input
// row (a record moved to index 5 of a 2-row input with its file renamed
// to match; a second record of row 0 in row 1's file; the two rows'
// files swapped with their records' tensors, every sha256 still true) was
// reported "already complete and valid", exit 0, while it does not hold
// the input's rows as they are. The rerun now refuses it naming the
// record, the row and the file, as a resume refuses such a record
// (keepValidated, keptDiffers).
func TestCaptureRerunRowsNotCovered(t *testing.T) {
	job := func(d string) []string { return []string{"capture", "--layers", "1", "--ids", "1,2,3;4,5", "--out", d} }
	for _, c := range []struct {
		name string
		edit func(t *testing.T, d string, m map[string]any)
		want string
	}{
		{"index beyond the input", func(t *testing.T, d string, m map[string]any) {
			if err := os.Rename(filepath.Join(d, "seq_000001.safetensors"), filepath.Join(d, "seq_000005.safetensors")); err != nil {
				t.Fatal(err)
			}
			rec := m["sequences"].([]any)[1].(map[string]any)
			rec["index"], rec["file"] = 5, "seq_000005.safetensors"
		}, "but sequences[1] has index 5, beyond the input's 2 rows"},
		{"row 0 twice", func(t *testing.T, d string, m map[string]any) {
			rec := m["sequences"].([]any)[1].(map[string]any)
			rec["index"], rec["id"] = 0, "0b"
		}, `but sequences[1] (the input's row 0) is in "seq_000001.safetensors", not seq_000000.safetensors`},
		{"rows' files swapped", func(t *testing.T, d string, m map[string]any) {
			a, b := filepath.Join(d, "seq_000000.safetensors"), filepath.Join(d, "seq_000001.safetensors")
			for _, r := range [][2]string{{a, a + ".x"}, {b, a}, {a + ".x", b}} {
				if err := os.Rename(r[0], r[1]); err != nil {
					t.Fatal(err)
				}
			}
			seqs := m["sequences"].([]any)
			r0, r1 := seqs[0].(map[string]any), seqs[1].(map[string]any)
			for _, k := range []string{"length", "tensors"} {
				r0[k], r1[k] = r1[k], r0[k]
			}
		}, `but its sequence of the input's row 0 (id "0") does not hold that row (it holds 2 tokens, the row 3)`},
	} {
		d := filepath.Join(t.TempDir(), "hs")
		if out, errs, code := runHsdb(t, job(d)...); code != 0 {
			t.Fatalf("capture: exit %d\n%s\n%s", code, out, errs)
		}
		editManifest(t, d, func(m map[string]any) { c.edit(t, d, m) })
		out, errs, code := runHsdb(t, job(d)...)
		if code != 1 || strings.Contains(out, "already complete") || !strings.Contains(errs, c.want) || !strings.Contains(errs, "give --force to capture it again") {
			t.Errorf("%s: exit %d, want 1 naming %q\n%s\n%s", c.name, code, c.want, out, errs)
		}
	}
}
