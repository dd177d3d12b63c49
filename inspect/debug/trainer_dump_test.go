package debug

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestPatchCompareRefuseTrainerDumps: patch and compare read hsdb dumps
// (seq_N.safetensors with hidden_states.{layer}); a speculators or
// SpecForge dump of the same run, valid as it is, must be refused naming
// its format and what they read, not reported as a missing tensor or a
// corrupt safetensors header (SpecForge's .ckpt is a torch archive).
func TestPatchCompareRefuseTrainerDumps(t *testing.T) {
	s := newSession(t, 1)
	l := NewLocal(s)
	if err := l.CaptureLayers([]int{1, 2, 3}, "stream"); err != nil { // SpecForge reads three
		t.Fatal(err)
	}
	if err := l.CaptureSite("model.norm", "hidden_states"); err != nil {
		t.Fatal(err)
	}
	done(t)(s.Run())
	dirs := map[string]string{}
	for _, f := range []string{"speculators", "specforge"} {
		dirs[f] = filepath.Join(t.TempDir(), f)
		if _, err := l.Dump(dirs[f], client.DumpRequest{Format: f}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	for f, dir := range dirs {
		_, perr := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1})
		_, cerr := s.Compare(dir)
		for cmd, err := range map[string]error{"patch": perr, "compare": cerr} {
			if err == nil || !strings.Contains(err.Error(), f+" format") || !strings.Contains(err.Error(), "hsdb dump") {
				t.Errorf("%s from a %s dump: %v; want a refusal naming the %s format and that it reads hsdb dumps", cmd, f, err, f)
			}
		}
	}
}

// TestPatchCompareNotADump: patch and compare given what is not a dump —
// a single capture file (what `save` writes), a directory without a
// manifest, a path that does not exist — say so, naming the path and what
// they read, instead of "open FILE/manifest.json: not a directory".
func TestPatchCompareNotADump(t *testing.T) {
	s := newSession(t, 1)
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	file := filepath.Join(t.TempDir(), "a.safetensors")
	if _, err := s.Save("stream", file, client.All, false); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "nope")
	// /dev/zero is named as the device it is (it was called "a file").
	for path, want := range map[string]string{file: "is a regular file, not a dump directory", empty: "holds no manifest.json", missing: "no such dump directory",
		os.DevNull: "is a character device, not a dump directory", "/dev/zero": "is a character device, not a dump directory"} {
		_, perr := s.Patch(client.PatchRequest{Tensor: "stream", Dump: path, Seq: -1})
		_, cerr := s.Compare(path)
		for cmd, err := range map[string]error{"patch": perr, "compare": cerr} {
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "not a directory") {
				t.Errorf("%s %s: %v; want %q naming the path", cmd, path, err, want)
			}
		}
	}
}
