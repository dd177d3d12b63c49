package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCaptureSpecForgeNoLossMaskNote: SpecForge samples need a loss_mask,
// so `hsdb capture --format specforge` writes all 1 for a row without
// one, and the draft then trains on every token, prompt included; the job
// said nothing of it. Now it counts those rows: 1 of the 2 below (the
// second row has no mask; --ids rows never do), and says nothing when every
// row has a mask.
func TestCaptureSpecForgeNoLossMaskNote(t *testing.T) {
	dir := t.TempDir()
	mixed := filepath.Join(dir, "mixed.jsonl")
	all := filepath.Join(dir, "all.jsonl")
	if err := writeFile(mixed, `{"input_ids": [1, 5, 7, 9], "loss_mask": [0, 0, 1, 1]}`+"\n"+`{"input_ids": [1, 20, 30]}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(all, `{"input_ids": [1, 5, 7, 9], "loss_mask": [0, 0, 1, 1]}`+"\n"); err != nil {
		t.Fatal(err)
	}
	note := func(n, of int) string {
		return "note: no loss_mask in " + strconv.Itoa(n) + " of " + strconv.Itoa(of) + " sequences: their SpecForge samples get loss_mask all 1, so the draft trains on every token (prompt included)"
	}
	for _, c := range []struct {
		input []string
		want  string // "" for no note
	}{
		{[]string{"--data", mixed}, note(1, 2)},
		{[]string{"--ids", "1,5,7;1,8"}, note(2, 2)},
		{[]string{"--data", all}, ""},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"capture", "--model", "../../testdata/hf/llama", "--format", "specforge", "--layers", "0,1,2", "--out", filepath.Join(t.TempDir(), "d")}, c.input...)
		if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.input, code, errOut.String())
		}
		got := out.String()
		if c.want == "" {
			if strings.Contains(got, "no loss_mask in") {
				t.Errorf("%v: every row has a loss_mask, yet:\n%s", c.input, got)
			}
		} else if !strings.Contains(got, c.want) {
			t.Errorf("%v: want %q in:\n%s", c.input, c.want, got)
		}
	}
}

// TestCaptureWhatHalfNote: `hsdb capture --what residual` printed only
// the layer lines "hsdb layer 1's output = ... = HF
// output_hidden_states[2]", though the files then hold vLLM's residual
// half, which no HF index holds (HF's entry is hidden_states + residual).
// The job now says so for either half, and nothing for the stream.
func TestCaptureWhatHalfNote(t *testing.T) {
	for _, c := range []struct{ what, want string }{
		{"residual", "note: --what residual: hidden_states.{i} holds vLLM's un-summed residual half (the running sum before the MLP output is added) of layer i's output, not the stream: HF output_hidden_states[i+1] is hidden_states + residual (--what stream)"},
		{"hidden_states", "note: --what hidden_states: hidden_states.{i} holds vLLM's un-summed hidden_states half (the MLP output, without the residual) of layer i's output, not the stream"},
		{"stream", ""},
	} {
		var out, errOut bytes.Buffer
		args := []string{"capture", "--layers", "1", "--what", c.what, "--ids", "1,403,407", "--out", filepath.Join(t.TempDir(), "d")}
		if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("--what %s: exit %d: %s", c.what, code, errOut.String())
		}
		got := out.String()
		if !strings.Contains(got, "hsdb layer 1's output = stream entering layer 2") {
			t.Errorf("--what %s: the layer line is missing:\n%s", c.what, got)
		}
		if c.want == "" {
			if strings.Contains(got, "note: --what") {
				t.Errorf("--what stream: a note on halves:\n%s", got)
			}
		} else if !strings.Contains(got, c.want) {
			t.Errorf("--what %s: want %q in:\n%s", c.what, c.want, got)
		}
	}
}

// TestCaptureSpeculatorsSummaryNamesEmbeddings: the job's summary of a
// speculators capture of ids 0,1,2,3 on the llama fixture (3 layers)
// said "speculators ids 0,1,2,3 (hsdb layers 0,1,2)"; id 0 is the
// embeddings, and the summary and check's dump line now say so. (The
// ids were eagle3's here, 2, N/2 = 1, N-3 = 0, N = 3, which is now
// refused as too shallow, as the other formats refuse it.)
func TestCaptureSpeculatorsSummaryNamesEmbeddings(t *testing.T) {
	out := filepath.Join(t.TempDir(), "d")
	stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/llama", "--format", "speculators", "--layers", "0,1,2,3", "--ids", "1,5,7", "--out", out)
	if want := "speculators ids 0,1,2,3 (the embeddings (id 0) and hsdb layers 0,1,2), bf16,"; code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("capture: exit %d, want %q in:\n%s%s", code, want, stdout, errs)
	}
	stdout, errs, code = runHsdb(t, "check", out, "--no-model")
	if want := ": speculators ids 0,1,2,3 = the embeddings (id 0) and hsdb layers 0,1,2, bf16, 1 sequence"; code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("check: exit %d, want %q in:\n%s%s", code, want, stdout, errs)
	}
}

// TestCaptureJSONFormatAndNotes: `hsdb capture --json` dropped what the
// text output says before the job (the notes) and which trainer format
// and ids were written: a speculators job's JSON read "layers": [0,1,2]
// with nothing saying the files hold speculators ids 0,1,2,3 (0 the
// embeddings). By hand on the llama fixture (3 layers, speculators ids
// 3, 0, 2, 1 given, written ascending) and a SpecForge job given three ids,
// whose loss_mask note (--ids rows carry none) the text prints.
func TestCaptureJSONFormatAndNotes(t *testing.T) {
	type result struct {
		Format    string   `json:"format"`
		FormatIDs []int    `json:"format_layer_ids"`
		Layers    []int    `json:"layers"`
		Notes     []string `json:"notes"`
		Exit      int      `json:"exit"`
	}
	run := func(args ...string) result {
		t.Helper()
		out, errs, code := runHsdb(t, append([]string{"capture", "--model", "../../testdata/hf/llama", "--ids", "1,5,7", "--json", "--out", filepath.Join(t.TempDir(), "d")}, args...)...)
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Exit != 0 {
			t.Fatalf("%v: exit %d, %v:\n%s%s", args, code, err, out, errs)
		}
		return r
	}
	r := run("--format", "speculators", "--layers", "3,0,2,1")
	if r.Format != "speculators" || fmt.Sprint(r.FormatIDs) != "[0 1 2 3]" || fmt.Sprint(r.Layers) != "[0 1 2]" || r.Notes == nil || len(r.Notes) != 0 {
		t.Errorf("speculators: %+v, want format speculators, ids [0 1 2 3], layers [0 1 2], notes []", r)
	}
	r = run("--format", "specforge", "--layers", "2,0,1")
	if r.Format != "specforge" || fmt.Sprint(r.FormatIDs) != "[0 1 2]" || len(r.Notes) != 1 ||
		!strings.HasPrefix(r.Notes[0], "no loss_mask in 1 of 1 sequences: their SpecForge samples get loss_mask all 1") {
		t.Errorf("specforge: %+v, want ids [0 1 2] and the loss_mask note", r)
	}
	r = run("--layers", "1")
	if r.Format != "hsdb" || r.FormatIDs != nil || fmt.Sprint(r.Layers) != "[1]" {
		t.Errorf("hsdb: %+v, want format hsdb, no format ids, layers [1]", r)
	}
}
