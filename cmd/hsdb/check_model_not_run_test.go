package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCheckModelNotRunSaysWhy: a --model that cannot run (a directory of
// config.json alone, no weights) leaves layer matching skipped; the
// report's line said "no --model loaded", as if none had been named. It
// now names the model's error (stderr says the shapes are checked against
// config.json alone). (A --tp the model cannot be split over is refused
// instead: TestCheckDiffImpossibleTP.)
func TestCheckModelNotRunSaysWhy(t *testing.T) {
	out, errs, code := runHsdb(t, "check", "../../testdata/captures/good.safetensors", "--model", "../../testdata/configs/deepseek-v3")
	want := "skip  matches model     --model could not run (--model ../../testdata/configs/deepseek-v3: safetensors: empty checkpoint directory"
	if !strings.Contains(out, want) || strings.Contains(out, "no --model loaded") {
		t.Errorf("exit %d, stdout:\n%s\nwant the line %q", code, out, want)
	}
	if !strings.Contains(errs, "cannot run the model") {
		t.Errorf("stderr %q: want the note that the model cannot run", errs)
	}
}

// TestCheckShapesAloneWithModelGiven: with --model naming a directory that
// cannot run (testdata/configs/deepseek-v3: config.json alone), check's
// diagnosis said "a reading from shapes alone (no --model)" though --model
// was given (its skip line says why it could not run); it says "no model
// ran" now, true both ways.
func TestCheckShapesAloneWithModelGiven(t *testing.T) {
	var out, errOut bytes.Buffer
	hsdbMain([]string{"check", "../../testdata/captures/ds_latent_flattened.pt", "--model", "../../testdata/configs/deepseek-v3"}, stdio{Out: &out, Err: &errOut})
	got := out.String()
	if !strings.Contains(got, "a reading from shapes alone (no model ran)") || strings.Contains(got, "(no --model)") ||
		!strings.Contains(got, "skip  matches model     --model could not run") {
		t.Errorf("stdout:\n%s\nstderr: %s", got, errOut.String())
	}
}

// TestWrapperUnusedTensorsWhy: loading Kimi-K2.5 (a multimodal wrapper
// whose text_config alone hsdb loads) warned of its vision tensors "(HF
// warns the same; check config.json if this is unexpected)": HF's
// KimiK25ForConditionalGeneration reads them and warns of nothing. The
// warning now gives the note's reason.
func TestWrapperUnusedTensorsWhy(t *testing.T) {
	script := t.TempDir() + "/empty.hsdb"
	if err := writeFile(script, "\n"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"--model", "../../testdata/hf/kimi_k25", "-x", script}, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := errOut.String()
	if !strings.Contains(got, "vision_tower.patch_embed.proj.weight (only text_config's language model is loaded, as the note above says)") || strings.Contains(got, "HF warns the same") {
		t.Errorf("stderr:\n%s", got)
	}
}
