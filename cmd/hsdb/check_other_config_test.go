package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDumpOtherConfig: a dump written from DeepSeek-V3's fp8 fixture
// and checked against the dense DeepSeek-V3 fixture (the same
// architecture and sizes, other weights) said "the dump was written from
// DeepseekV3ForCausalLM (…), as --model" above files that all depart from
// --model's values. The manifest records its config.json's sha256: the
// model rule now says the configs differ, with both digests (computed here
// from the files) and the manifest's model path; against its own model
// it says nothing of the kind.
func TestCheckDumpOtherConfig(t *testing.T) {
	const fp8, dense = "../../testdata/hf/deepseek_v3_fp8", "../../testdata/hf/deepseek_v3"
	sha := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	out := filepath.Join(t.TempDir(), "d")
	if _, errs, code := runHsdb(t, "capture", "--model", fp8, "--layers", "0,1", "--ids", "0,5,17,33", "--out", out); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	want := "as --model, but from another config.json (the manifest's sha256 " + sha(fp8)[:12] + "…, --model's " + sha(dense)[:12] + "…; the manifest names " + fp8 + ")"
	stdout, errs, code := runHsdb(t, "check", out, "--model", dense, "--summary")
	if code != 1 || !strings.Contains(stdout, want) {
		t.Errorf("check against another config: exit %d, stderr %q; want exit 1 and %q in\n%s", code, errs, want, stdout)
	}
	stdout, errs, code = runHsdb(t, "check", out, "--model", fp8, "--summary")
	if code != 0 || strings.Contains(stdout, "another config.json") || !strings.Contains(stdout, "as --model") {
		t.Errorf("check against its own model: exit %d, stderr %q\n%s", code, errs, stdout)
	}
}
