package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertOutParentAndMessage: `hsdb convert llama2c ... --out
// new/dir` failed with "convert: stat new: no such file or directory"
// (missing parents are made now, as for capture --out), and every
// convert error read "hsdb convert: convert: ...". The converted
// directory then generates llama2.c's documented greedy text
// (testdata/stories260K/expected_greedy.txt).
func TestConvertOutParentAndMessage(t *testing.T) {
	want, err := os.ReadFile("../../testdata/stories260K/expected_greedy.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "new", "dir")
	const bin, tok = "../../testdata/stories260K/stories260K.bin", "../../testdata/stories260K/tok512.bin"
	if o, errs, code := runHsdb(t, "convert", "llama2c", bin, "--tokenizer", tok, "--out", out); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, o, errs)
	}
	text, errs, code := runHsdb(t, "generate", "--model", out, "-n", "20")
	if code != 0 || !strings.HasPrefix(string(want), strings.TrimSuffix(text, "\n")) || len(text) < 10 {
		t.Errorf("generate on the conversion: exit %d %q (stderr %q)", code, text, errs)
	}
	_, errs, code = runHsdb(t, "convert", "llama2c", bin, "--tokenizer", tok, "--out", out)
	if code != 1 || !strings.HasPrefix(errs, "hsdb convert: "+out+" exists") || strings.Contains(errs, "convert: convert:") {
		t.Errorf("second convert: exit %d, stderr %q", code, errs)
	}
}
