package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestManifestLengthLieNamed: a dump whose manifest.json was edited to
// record length 99 for a 4-token sequence failed the one-sequence rule
// with "the dump's manifest 99 sum to 99, but input_ids holds 4 tokens",
// naming neither the field nor what it says. It now names the manifest's
// field and both counts (4 = the ids llamaDump writes).
func TestManifestLengthLieNamed(t *testing.T) {
	_, dir := llamaDump(t, []int{0})
	p := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["sequences"].([]any)[0].(map[string]any)["length"] = 99
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pr := CheckPath(dir, CheckOptions{})
	if len(pr.Files) != 1 {
		t.Fatalf("files: %d\n%s", len(pr.Files), strings.Join(pr.Lines(), "\n"))
	}
	rr, ok := pr.Files[0].Rule(capture.RuleOneSeq)
	want := "the dump's manifest records length 99 for this file, but input_ids holds 4 tokens"
	if !ok || rr.Status != capture.Fail || rr.Detail != want {
		t.Errorf("one-sequence rule %+v, want FAIL %q", rr, want)
	}
}
