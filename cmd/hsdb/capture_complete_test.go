package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dirState is each file's bytes and modification time under dir, by
// relative path: what a rerun must leave as it was.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	st := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		st[rel] = fi.ModTime().Format(time.RFC3339Nano) + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestCaptureRerunComplete: `hsdb capture` run again with the same job and
// --out on its finished dump exited 1 ("dump exists; give --force"); it
// now verifies the dump (every listed file's tensors against the
// manifest's sha256, nothing unlisted) and says it is already complete
// and valid, exit 0, leaving every file's bytes and time as they were;
// --json says already_complete, 2 skipped, 0 captured. Expected by hand:
// the job is 2 sequences (--ids), so 2 files. A dump that is not this
// job's, or whose file was changed (one byte of seq_000001's last tensor
// flipped), is refused, exit 1, naming why and --force; the changed file
// stays as it is.
func TestCaptureRerunComplete(t *testing.T) {
	out := filepath.Join(t.TempDir(), "d")
	args := []string{"capture", "--ids", "1,403,407;1,400,281", "--layers", "1,3", "--out", out}
	if stdout, errs, code := runHsdb(t, args...); code != 0 {
		t.Fatalf("capture: exit %d\n%s%s", code, stdout, errs)
	}
	before := dirState(t, out)
	stdout, errs, code := runHsdb(t, args...)
	if code != 0 || !strings.Contains(stdout, "dump "+out+": already complete and valid: the same job, 2 files verified against the manifest") {
		t.Fatalf("rerun: exit %d\n%s%s", code, stdout, errs)
	}
	after := dirState(t, out)
	if len(after) != len(before) {
		t.Fatalf("rerun changed the files: %d before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("rerun rewrote %s", k)
		}
	}
	stdout, errs, code = runHsdb(t, append(args, "--json")...)
	var r struct {
		Exit            int  `json:"exit"`
		Captured        int  `json:"captured"`
		Skipped         int  `json:"skipped"`
		AlreadyComplete bool `json:"already_complete"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || r.Exit != 0 || !r.AlreadyComplete || r.Skipped != 2 || r.Captured != 0 {
		t.Fatalf("rerun --json: exit %d %+v %v\n%s%s", code, r, err, stdout, errs)
	}

	other := []string{"capture", "--ids", "1,403,407;1,400,281", "--layers", "1,2", "--out", out}
	if _, errs, code := runHsdb(t, other...); code != 1 || !strings.Contains(errs, "dump exists, written by another job (layers 1,3, now 1,2); give --force to replace it") {
		t.Errorf("another job: exit %d %s", code, errs)
	}

	f := filepath.Join(out, "seq_000001.safetensors")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x40
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = runHsdb(t, args...)
	if code != 1 || !strings.Contains(errs, "written by this job, but its files fail their check (1 of 2): ") ||
		!strings.Contains(errs, "seq_000001.safetensors") || !strings.Contains(errs, "give --force to capture it again") {
		t.Errorf("changed file: exit %d %s", code, errs)
	}
	if now, _ := os.ReadFile(f); string(now) != string(b) {
		t.Error("the refused rerun touched the changed file")
	}
}

// TestCaptureRerunOtherDType: --dtype rounds the weights on load, so a
// dump captured without it is not verified, resumed or mixed by a run
// with --dtype bf16: the rerun is refused, exit 1, naming both settings
// and how to go on (rerun without --dtype, --force, another --out), and
// the dump stays as it was; a dump captured with --dtype bf16 records it
// in its manifest (model.weights_converted_to), and its rerun with the
// same --dtype is complete. Before, the manifest did not record --dtype
// and nothing compared it.
func TestCaptureRerunOtherDType(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "d")
	args := []string{"capture", "--ids", "1,403,407;1,400,281", "--layers", "1,3", "--out", out}
	if stdout, errs, code := runHsdb(t, args...); code != 0 {
		t.Fatalf("capture: exit %d\n%s%s", code, stdout, errs)
	}
	before := dirState(t, out)
	_, errs, code := runHsdb(t, append(args, "--dtype", "bf16")...)
	for _, want := range []string{
		"dump exists, finished by this job at another --dtype: it holds 2 validated sequences captured without --dtype; this run is at --dtype bf16.",
		"--dtype rounds the weights on load",
		"Rerun without --dtype to have it verified, give --force to replace it with a capture at --dtype bf16, or choose another --out",
	} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("rerun with --dtype bf16: exit %d %s\nwant %q", code, errs, want)
		}
	}
	for k, v := range dirState(t, out) {
		if before[k] != v {
			t.Errorf("the refused rerun changed %s", k)
		}
	}
	out2 := filepath.Join(dir, "d2")
	args2 := []string{"capture", "--ids", "1,403,407;1,400,281", "--layers", "1,3", "--dtype", "bf16", "--out", out2}
	if stdout, errs, code := runHsdb(t, args2...); code != 0 {
		t.Fatalf("capture --dtype bf16: exit %d\n%s%s", code, stdout, errs)
	}
	b, err := os.ReadFile(filepath.Join(out2, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Model struct {
			WeightDType string `json:"weights_converted_to"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Model.WeightDType != "bf16" {
		t.Errorf("manifest model.weights_converted_to = %q (%v), want bf16", m.Model.WeightDType, err)
	}
	if stdout, errs, code := runHsdb(t, args2...); code != 0 || !strings.Contains(stdout, "already complete and valid") {
		t.Errorf("rerun with the same --dtype: exit %d\n%s%s", code, stdout, errs)
	}
}
