package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestCheckDiffAgree: check and diff give the same exit code on every
// capture fixture (0 valid, 1 problems, 2 unreadable), and --json prints
// one object per file whose exit_code and verdict agree with the exit.
func TestCheckDiffAgree(t *testing.T) {
	ents, err := os.ReadDir(capDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".pt") && !strings.HasSuffix(e.Name(), ".safetensors") || e.Name() == "reference.safetensors" || strings.HasPrefix(e.Name(), "ds_") {
			continue
		}
		args := []string{capDir + e.Name(), "--model", "../../testdata/hf/llama", "--layers", "0,1,2"}
		_, _, cc := runHsdb(t, append([]string{"check"}, args...)...)
		_, _, dc := runHsdb(t, append([]string{"diff"}, args...)...)
		out, _, jc := runHsdb(t, append([]string{"check", "--json"}, args...)...)
		if cc != dc || jc != cc {
			t.Errorf("%s: check exits %d, diff %d, check --json %d", e.Name(), cc, dc, jc)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var obj struct {
			Command string `json:"command"`
			Path    string `json:"path"`
			Verdict string `json:"verdict"`
			Exit    int    `json:"exit"`
		}
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &obj) != nil || obj.Exit != cc || obj.Path == "" || obj.Command != "check" {
			t.Errorf("%s: --json output %q (exit %d)", e.Name(), out, cc)
		}
	}
}

// TestNothingComparable: a file with hidden states but no input_ids has
// nothing to compare: check and diff exit 2, not 1 or 0.
func TestNothingComparable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "noids.safetensors")
	x := make([]float32, 4*96)
	for i := range x {
		x[i] = float32(i%13) - 6
	}
	if err := safetensors.WriteFile(p, []safetensors.Named{{Name: "hidden_states.0", T: tensor.FromF32(x, 4, 96)}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "diff"} {
		out, errs, code := runHsdb(t, cmd, p, "--model", "../../testdata/hf/llama")
		if code != 2 || !strings.Contains(out+errs, "nothing comparable") {
			t.Errorf("%s: exit %d\n%s%s", cmd, code, out, errs)
		}
	}
}

// TestCheckSummary: a directory of 24 files (21 copies of a good capture,
// 3 of an off-by-one one) is summarized by default: counts per finding,
// the first files of each; --full prints every file.
func TestCheckSummary(t *testing.T) {
	dir := t.TempDir()
	good, _ := os.ReadFile(capDir + "good_speculators.pt")
	bad, _ := os.ReadFile(capDir + "shifted_by_one.pt")
	for i := range 24 {
		b := good
		if i%8 == 0 {
			b = bad
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("data_%02d.pt", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, code := runHsdb(t, "check", dir, "--model", "../../testdata/hf/llama", "--layers", "0,1,2")
	if code != 1 || !strings.Contains(out, "24 files, verdict: problems found") || !strings.Contains(out, "    21  valid") ||
		!strings.Contains(out, "     3  FAIL matches model") || !strings.Contains(out, "data_00.pt: hidden_states[0]: labelled layer 0, matches embeddings") ||
		!strings.Contains(out, "… and 18 more") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	out, _, _ = runHsdb(t, "check", dir, "--full", "--model", "../../testdata/hf/llama", "--layers", "0,1,2")
	if strings.Count(out, "layer matching (hsdb forward pass on input_ids):") != 24 {
		t.Fatalf("--full:\n%s", out)
	}
}
