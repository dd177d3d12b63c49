package debug

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/inspect/client"
)

// TestSaveFileMadeMeanwhile: savePathOK checks the name before the tensor
// is computed and written; a file another process makes there meanwhile
// was replaced by the rename (os.Rename replaces), without --force, or
// with --force although save had not written it. Now, for .safetensors
// and .npy: without force the save is refused and the other file kept
// byte for byte; with force a foreign file is refused alike, while a file
// Save wrote is replaced. No temporary file is left in any case.
func TestSaveFileMadeMeanwhile(t *testing.T) {
	t.Cleanup(func() { testHookBeforePublish = nil })
	s := newSessionOn(t, "cpu", 2)
	if _, err := s.Break("model.layers.1", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	const theirs = "their notes, not a tensor"
	for _, ext := range []string{"safetensors", "npy"} {
		for _, force := range []bool{false, true} {
			dir := t.TempDir()
			path := filepath.Join(dir, "x."+ext)
			testHookBeforePublish = func(p string) {
				if err := os.WriteFile(p, []byte(theirs), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Save("hidden_states", path, client.All, force)
			testHookBeforePublish = nil
			if err == nil || !strings.Contains(err.Error(), "save "+path+":") {
				t.Fatalf("%s force=%v: got %v, want a refusal naming %s", ext, force, err, path)
			}
			if b, _ := os.ReadFile(path); string(b) != theirs {
				t.Fatalf("%s force=%v: the other file now holds %d bytes %.20q", ext, force, len(b), b)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("%s force=%v: %d entries left in the directory, want the other file alone", ext, force, len(ents))
			}
		}
	}
	// A file Save wrote, made again meanwhile by another save: --force
	// replaces it (the rule: --force replaces what hsdb wrote).
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	testHookBeforePublish = func(p string) {
		testHookBeforePublish = nil
		if _, err := s.Save("residual", p, client.All, false); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Save("hidden_states", path, client.All, true)
	if err != nil {
		t.Fatalf("--force over a file save wrote: %v", err)
	}
	if rep.Key != "model.layers.1:hidden_states" {
		t.Fatalf("key %q", rep.Key)
	}
	if err := savedByHsdb(path); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	names := f.Names()
	f.Close()
	if len(names) != 1 || names[0] != "model.layers.1:hidden_states" {
		t.Fatalf("the file holds %v, want the forced save's model.layers.1:hidden_states", names)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d entries left in the directory, want the saved file alone", len(ents))
	}
}
