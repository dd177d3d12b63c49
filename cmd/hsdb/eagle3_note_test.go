package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureSpecForgeAuxRefused: `hsdb capture --format specforge
// --layers 0,1` wrote aux_hidden_state [1, len, 2·hidden] (with a note
// only), though SpecForge trains on exactly 3 layers (its draft's fc takes
// 3·target_hidden_size, specforge/modeling/draft/llama3_eagle.py) and
// check fails such a file; the job now refuses it before loading the
// model, exit 2, nothing written. With three ids (0,1,2, all the llama
// fixture's decoder layers) it runs and says nothing of aux layers.
func TestCaptureSpecForgeAuxRefused(t *testing.T) {
	for _, c := range []struct {
		layers string
		code   int
	}{{"0,1", 2}, {"0,1,2", 0}} {
		var out, errOut bytes.Buffer
		parent := t.TempDir()
		args := []string{"capture", "--model", "../../testdata/hf/llama", "--format", "specforge", "--layers", c.layers, "--ids", "1,5,7,9", "--out", filepath.Join(parent, "d")}
		code := hsdbMain(args, stdio{Out: &out, Err: &errOut})
		if code != c.code {
			t.Fatalf("--layers %s: exit %d, want %d: %s%s", c.layers, code, c.code, out.String(), errOut.String())
		}
		refused := strings.Contains(errOut.String(), "specforge ids 0,1 (hsdb layers 0,1): 2 aux layers would make aux_hidden_state [1, len, 2·hidden], which SpecForge cannot train on: it reads exactly 3")
		if refused != (c.code == 2) || strings.Contains(out.String(), "aux layers") || strings.Contains(out.String(), "note: specforge ids") {
			t.Errorf("--layers %s: refused %v:\n%s%s", c.layers, refused, out.String(), errOut.String())
		}
		if ents, _ := os.ReadDir(parent); c.code == 2 && len(ents) != 0 {
			t.Errorf("--layers %s: the refused job left %v", c.layers, ents)
		}
	}
}

// TestCaptureSpeculatorsLossMaskNote: `--data` rows with a loss_mask
// captured --format speculators lost their masks without a word:
// speculators' hs_{idx}.safetensors hold hidden_states and token_ids
// only, and its trainer takes loss_mask from its preprocessed dataset by
// the sample's index. The job now says the masks are not written and
// where the trainer reads them; rows without loss_mask get no note, and
// SpecForge (whose files hold loss_mask) none.
func TestCaptureSpeculatorsLossMaskNote(t *testing.T) {
	dir := t.TempDir()
	masked := filepath.Join(dir, "m.jsonl")
	plain := filepath.Join(dir, "p.jsonl")
	if err := writeFile(masked, `{"input_ids": [1, 5, 7, 9], "loss_mask": [0, 0, 1, 1]}`+"\n"+`{"input_ids": [1, 20, 30]}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(plain, `{"input_ids": [1, 5, 7, 9]}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format, data string
		note         bool
	}{{"speculators", masked, true}, {"speculators", plain, false}, {"specforge", masked, false}} {
		var out, errOut bytes.Buffer
		args := []string{"capture", "--model", "../../testdata/hf/llama", "--format", c.format, "--layers", "0,1,2", "--data", c.data, "--out", filepath.Join(t.TempDir(), "d")}
		if c.format == "speculators" {
			args[6] = "0,1,2,3"
		}
		if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("%s %s: exit %d: %s", c.format, c.data, code, errOut.String())
		}
		has := strings.Contains(out.String(), "note: 1 of 2 rows of "+c.data+" have a loss_mask, which speculators files do not hold")
		if c.note != has {
			t.Errorf("%s %s: note %v, want %v:\n%s", c.format, filepath.Base(c.data), has, c.note, out.String())
		}
	}
}

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

// TestCaptureSpeculatorsAuxNoteNoREPL: `hsdb capture --format speculators
// --layers 1,2,3` noted "EAGLE-3's draft reads 3 (4 ids, e.g. --layers
// eagle3; the REPL's ids are the captured layers + 1, ...)": the REPL
// clause belongs to the debugger's dump, and eagle3 cannot serve a model
// this shallow (ids 2, 1, 0, 3 for the llama fixture's 3 layers, by
// hand: 2, N/2, N-3, N). The job's note says how --layers takes them; the
// debugger's dump keeps its own (repl's TestDumpEagle3AuxNote).
func TestCaptureSpeculatorsAuxNoteNoREPL(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"capture", "--model", "../../testdata/hf/llama", "--format", "speculators", "--layers", "1,2,3", "--ids", "1,5,7,9", "--out", filepath.Join(t.TempDir(), "d")}
	if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := "note: speculators ids 1,2,3: the file holds 2 aux ids before the last (hidden_states[:, :-1]), EAGLE-3's draft reads 3 (4 ids); --layers takes them in speculators' ids, eagle3 being 2, N/2, N-3, N\n"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "the REPL") {
		t.Errorf("want %q, and no REPL, in:\n%s", want, out.String())
	}
}
