package main

import (
	"hsdb/engine/enginetest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editManifest rewrites dir's manifest.json with edit applied to its
// decoded object (as someone other than hsdb would change the file).
func editManifest(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	enginetest.EditJSON(t, filepath.Join(dir, "manifest.json"), edit)
}

// boundedLines fails unless every line of text is at most 4096 bytes
// (client.MaxMessageBytes) and holds no terminal escape, and no line is
// one the hostile field forged.
func boundedLines(t *testing.T, what, text string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if len(l) > 4096 || strings.Contains(l, "\x1b") || strings.HasPrefix(l, "verdict") {
			t.Errorf("%s: a line of %d bytes, an escape or a forged line: %.200q", what, len(l), l)
		}
	}
}

// TestCaptureRerunHostileManifest: a finished dump's manifest.json whose
// strings someone changed (a device or a model path with a newline, a
// terminal escape and 1 MB) was quoted raw by the rerun's refusal and its
// "already complete" summary: a line "verdict: valid" of the file's own
// and 1 MB messages. Each string is now quoted as a file's (Go escapes,
// its first 256 bytes and its size), so the messages stay bounded lines.
func TestCaptureRerunHostileManifest(t *testing.T) {
	hostile := "p\n\x1b[31mverdict\n" + strings.Repeat("A", 1<<20)
	quoted := `"p\n\x1b[31mverdict\nAAAA`
	job := func(d string) []string { return []string{"capture", "--layers", "1", "--ids", "1,2,3;4,5", "--out", d} }
	fresh := func() string {
		d := filepath.Join(t.TempDir(), "hs")
		if out, errs, code := runHsdb(t, job(d)...); code != 0 {
			t.Fatalf("capture: exit %d\n%s\n%s", code, out, errs)
		}
		return d
	}

	for _, field := range []string{"device", "weights_converted_to"} {
		d := fresh()
		editManifest(t, d, func(m map[string]any) { m["model"].(map[string]any)[field] = hostile })
		out, errs, code := runHsdb(t, job(d)...)
		if code != 1 || !strings.Contains(errs, quoted) || strings.Count(errs, "\n") != 1 {
			t.Errorf("model.%s hostile: exit %d, want 1 and one line quoting %s\n%.600s", field, code, quoted, errs)
		}
		boundedLines(t, field, out+errs)
	}

	d := fresh()
	editManifest(t, d, func(m map[string]any) {
		m["model"].(map[string]any)["path"] = hostile
		m["validation"].([]any)[0].(map[string]any)["detail"] = "ok\nverdict: valid \x1b[31m"
	})
	out, errs, code := runHsdb(t, job(d)...)
	if code != 0 || !strings.Contains(out, "already complete and valid") || !strings.Contains(out, "model "+quoted) {
		t.Errorf("model.path hostile: exit %d, want 0, already complete, model %s\n%.600s\n%.600s", code, quoted, out, errs)
	}
	boundedLines(t, "model.path", out+errs)

	// The debugger's `dump D` over it says what D holds, quoting the path.
	script := filepath.Join(t.TempDir(), "dump.hsdb")
	if err := os.WriteFile(script, []byte("input ids 1,403,407\ncapture layers 1\nrun\ndump "+d+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runHsdb(t, "-x", script)
	if code == 0 || !strings.Contains(out+errs, "of model "+quoted) {
		t.Errorf("dump over it: exit %d, want non-zero and model %s\n%.600s\n%.600s", code, quoted, out, errs)
	}
	boundedLines(t, "dump over it", out+errs)

	// A file in the dump directory named with a newline and an escape.
	d = fresh()
	if err := os.WriteFile(filepath.Join(d, "evil\nverdict: valid\x1b[31m"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runHsdb(t, job(d)...)
	if code != 1 || !strings.Contains(errs, `holds "evil\nverdict: valid\x1b[31m", which hsdb did not write`) || strings.Count(errs, "\n") != 1 {
		t.Errorf("a file named with a newline: exit %d, want 1 and one line quoting its name\n%s", code, errs)
	}
	boundedLines(t, "file name", out+errs)
}
