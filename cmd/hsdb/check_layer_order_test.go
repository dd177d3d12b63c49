package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckLayerOrderCLI: `hsdb check --layers` of capture files holding
// the requested layers in another order passed. On the llama fixture (3
// layers): a hsdb dump captured with --layers 2,0,1 (keys
// hidden_states.{layer}, metadata and manifest 2,0,1) checked with
// --layers 0,1,2, and a SpecForge dump of SGLang ids 0,1,2 (= hsdb layers
// 0,1,2, aux_hidden_state in that order; its samples name no layers, the
// manifest does) checked with --layers 2,0,1, now fail (exit 1) naming
// the order requested and the order held; the capture's own order passes.
func TestCheckLayerOrderCLI(t *testing.T) {
	for _, c := range []struct {
		format, capLayers, good, bad, want string
	}{
		{"hsdb", "2,0,1", "2,0,1", "0,1,2", "requested 0,1,2: the same layers in another order: the file's metadata records 2,0,1 in this order"},
		{"specforge", "0,1,2", "0,1,2", "2,0,1", "requested 2,0,1: the same layers in another order: the dump's manifest records 0,1,2 in this order"},
	} {
		out := filepath.Join(t.TempDir(), "d")
		if stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--device", "cpu", "--format", c.format, "--layers", c.capLayers, "--ids", "1,5,7;2,3", "--out", out); code != 0 {
			t.Fatalf("%s capture: exit %d\n%s%s", c.format, code, stdout, errs)
		}
		if stdout, errs, code := runHsdb(t, "check", "--layers", c.good, out); code != 0 {
			t.Errorf("%s check --layers %s: exit %d\n%s%s", c.format, c.good, code, stdout, errs)
		}
		stdout, errs, code := runHsdb(t, "check", "--layers", c.bad, out)
		if code != 1 || strings.Count(stdout, c.want) != 2 {
			t.Errorf("%s check --layers %s: exit %d, want 1 and %q for each of 2 files in:\n%s%s", c.format, c.bad, code, c.want, stdout, errs)
		}
	}
}

// TestCheckSpecForgeManifestOrder: a SpecForge dump of SGLang ids 0,1,2
// whose manifest's layers were rewritten to 2,0,1 (format_layer_ids still
// 0,1,2; the samples name no layers) passed check, each sample labelled
// by the rewritten layers. The manifest's two records of the layers now
// disagree aloud: exit 1, naming both (hsdb layers of SGLang ids by hand:
// s = layer s).
func TestCheckSpecForgeManifestOrder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "d")
	if stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--device", "cpu", "--format", "specforge", "--layers", "0,1,2", "--ids", "1,5,7", "--out", out); code != 0 {
		t.Fatalf("capture: exit %d\n%s%s", code, stdout, errs)
	}
	mp := filepath.Join(out, "manifest.json")
	raw, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["capture"].(map[string]any)["layers"] = []int{2, 0, 1}
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mp, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, errs, code := runHsdb(t, "check", out)
	if want := "FAIL  layer count       the manifest's layers 2,0,1 are not its specforge ids 0,1,2, which are hsdb layers 0,1,2 in file order"; code != 1 || !strings.Contains(stdout, want) {
		t.Errorf("exit %d, want 1 and %q in:\n%s%s", code, want, stdout, errs)
	}
}
