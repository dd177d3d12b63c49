package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"hsdb/engine"
)

// TestNoCUDAWorkerNamesReadmeSection: `--device cuda` on a machine with
// neither the CUDA worker nor a -tags cuda build points to the README
// section that installs the worker, and that section is a heading of
// README.md. It pointed to "README, Install", which README does not have
// (the install is under "GPUs": scripts/install.sh).
func TestNoCUDAWorkerNamesReadmeSection(t *testing.T) {
	if engine.CUDABuiltIn() {
		t.Skip("a -tags cuda build runs --device cuda in process")
	}
	noCUDAWorker(t)
	_, errs, code := runHsdb(t, "--model", "../../testdata/hf/deepseek_v3", "--device", "cuda", "-x", os.DevNull)
	m := regexp.MustCompile(`README, ([A-Za-z]+):`).FindStringSubmatch(errs)
	if code == 0 || m == nil {
		t.Fatalf("exit %d, stderr %q: want a failure naming a README section", code, errs)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(m[1]) + `\b`).Match(readme) {
		t.Errorf("stderr %q names README section %q, which README.md has no heading for", errs, m[1])
	}
	if !strings.Contains(errs, "scripts/install.sh") {
		t.Errorf("stderr %q does not name scripts/install.sh, README's one command for the worker", errs)
	}
}
