package repl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureRerunStartsOver: `run` is a new prefill, and a dump after it
// held the previous run's sequences too: three sequences run, then one,
// dumped as "3 sequences (2, 2, 2 tokens)" — seq 1 and 2 from the first
// batch beside seq 0 of the second. And a run under `inject shift-rows`,
// then `inject clear` and a clean run, dumped a manifest still listing the
// fault, so check failed data the clean run made. After the fix the dump
// holds the last run alone: one sequence of ids [1, 350] (by hand: the
// second `input`), no injected_faults in manifest.json, and check passes
// it against the model.
func TestCaptureRerunStartsOver(t *testing.T) {
	f := newFake(t, 2)
	f.Exec("capture layers 1")
	f.Exec("input ids 1,403,407 ; ids 1,400 ; ids 1,281")
	f.Exec("inject shift-rows at layers.1")
	f.Exec("run")
	f.Exec("inject clear")
	f.Exec("input ids 1,350")
	f.Exec("run")
	f.AssertExec("capture list", "captured: seq 0: 2 tokens\n")
	d := filepath.Join(t.TempDir(), "d")
	out := f.AssertExec("dump "+d, "dumped 1 sequence (2 tokens) to ")
	if strings.Contains(out, "INJECTED") {
		t.Fatalf("a clean run's dump says it ran under injected faults:\n%s", out)
	}
	raw, err := os.ReadFile(filepath.Join(d, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Faults    []string `json:"injected_faults"`
		Sequences []struct {
			Length int `json:"length"`
		} `json:"sequences"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Faults) != 0 || len(m.Sequences) != 1 || m.Sequences[0].Length != 2 {
		t.Fatalf("manifest: faults %v, sequences %+v; want none and one of 2 tokens", m.Faults, m.Sequences)
	}
	f.AssertExec("check "+d+" --layers 1", `"input_ids": tensor [2] i64`, "  verdict: valid\n")
}

// TestDumpSaysFaultsAndEdits: `dump` of a run under `inject` or with a
// `set var` edit printed only passing rules, though manifest.json records
// the fault or the edit and check fails such a dump; it now says so where
// the dump is made. Expected text by hand from the commands typed.
func TestDumpSaysFaultsAndEdits(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("capture layers 0")
	f.Exec("input ids 1,403")
	f.Exec("inject scale-residual 0.5 at layers.0")
	f.Exec("run")
	a := filepath.Join(t.TempDir(), "a")
	f.AssertExec("dump "+a, "note: written under INJECTED FAULTS (a rehearsal, not data to train on; check fails it): scale-residual")
	// The dump's rule, in the 16-character name column every rule is
	// printed in ("no injected faults", 18 characters, pushed its detail
	// out of line): "not injected" and 4 spaces of padding, then two.
	f.assertVerdictFails("check "+a, "\n  FAIL  not injected      recorded under `inject`: scale-residual 0.5 at model.layers.0 (a rehearsal of a bug, not data to train on)\n")
	f.Exec("inject clear")
	f.Exec("break layers.0")
	f.Exec("run")
	f.Exec("set var stream[0, 0] = 5")
	f.Exec("continue")
	out := f.AssertExec("dump "+filepath.Join(t.TempDir(), "b"), "note: the values hold the pass's edits (manifest \"edits\"): edit 1: model.layers.0 stream[0:1, 0:1] = 5")
	if strings.Contains(out, "INJECTED") {
		t.Fatalf("dump of a clean run:\n%s", out)
	}
}

// TestBreakAlsoSetNote: a second breakpoint at a site one already stops at
// fired with it silently ("[breakpoint 1; breakpoint 2]"); as gdb does,
// creating it says which breakpoints are also set there, whether typed
// with `model.` or without. Expected lines by hand.
func TestBreakAlsoSetNote(t *testing.T) {
	f := newFake(t, 1)
	out := f.Exec("break layers.2")
	if strings.Contains(out, "Note:") {
		t.Fatalf("first breakpoint: %s", out)
	}
	f.AssertExec("break model.layers.2 if nan", "Breakpoint 2 at model.layers.2 (1 site) if nan\nNote: breakpoint 1 also set at model.layers.2.\n")
	f.AssertExec("tbreak layers.2", "Note: breakpoints 1, 2 also set at layers.2.\n")
	if out := f.Exec("break layers.3"); strings.Contains(out, "Note:") {
		t.Fatalf("another site: %s", out)
	}
}

// TestDumpOfSitesNamesThem: a dump of site captures alone printed
// "layers none ()" and its layer-count rule "layers  (), sites …"; both
// now name the sites (keys SITE:TENSOR, by hand from the command typed).
func TestDumpOfSitesNamesThem(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,403,407")
	f.Exec("capture site layers.1.mlp output")
	f.Exec("run")
	out := f.AssertExec("dump "+filepath.Join(t.TempDir(), "s"), ": sites model.layers.1.mlp:output, f32\n", "pass  layer count       sites model.layers.1.mlp:output\n")
	if strings.Contains(out, "()") || strings.Contains(out, "none") {
		t.Fatalf("dump of site captures:\n%s", out)
	}
}
