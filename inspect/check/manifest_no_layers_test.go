package check

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestDumpManifestLayersLost: a dump of layer captures (capture.what
// "stream") whose manifest's capture.layers is empty or null fails the
// layer-count rule saying the manifest lost its layers; it skipped the
// rule as "no --layers requested" and the dump passed, though hsdb
// writes the captured layers there for every layer capture (and check
// holds each file's keys to them).
func TestDumpManifestLayersLost(t *testing.T) {
	_, dir := llamaDump(t, []int{1})
	p := filepath.Join(dir, capture.ManifestName)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	layers := regexp.MustCompile(`"layers": \[[^\]]*\]`)
	if !layers.Match(orig) {
		t.Fatalf("manifest has no capture.layers:\n%s", orig)
	}
	for _, v := range []string{"[]", "null"} {
		if err := os.WriteFile(p, layers.ReplaceAll(orig, []byte(`"layers": `+v)), 0o644); err != nil {
			t.Fatal(err)
		}
		r := CheckPath(dir, CheckOptions{})
		want := `the manifest's capture.what is "stream" (layer captures) but its capture.layers is empty: the layers the files hold are not recorded`
		if !r.Failed() || !strings.Contains(strings.Join(r.Lines(), "\n"), want) {
			t.Errorf("layers %s: want a failure naming %q, got\n%s", v, want, strings.Join(r.Lines(), "\n"))
		}
	}
}
