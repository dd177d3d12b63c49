package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestModelFitUsage: a --tp the model cannot be split over, a
// --load-layers range outside it, --ep on a model without routed experts
// and a --pp its decoder layers cannot be split into are flag values the
// model's config.json rules out, known before any weight is read: every
// command refuses them as usage errors (exit 2) with one message each.
// The debugger, generate and plan exited 1 (as a model that fails to
// load) where check and diff exited 2, and check went on without the model
// for a bad --load-layers or --pp. The messages are written out here from
// stories260K's config (8 heads, 5 decoder layers); the same refusal on a
// directory holding config.json alone shows it comes before the load
// (which would name the missing weights).
func TestModelFitUsage(t *testing.T) {
	capFile := "../../testdata/captures/final_norm.pt"
	cmds := []struct {
		name string
		args func(model string) []string
	}{
		{"hsdb", func(m string) []string { return []string{"--model", m, "-x", "/dev/null"} }},
		{"hsdb generate", func(m string) []string { return []string{"generate", "--model", m, "--ids", "1,2"} }},
		{"hsdb plan", func(m string) []string { return []string{"plan", "--model", m} }},
		{"hsdb capture", func(m string) []string {
			return []string{"capture", "--model", m, "--layers", "1", "--ids", "1,2", "--out", filepath.Join(t.TempDir(), "out")}
		}},
		{"hsdb check", func(m string) []string { return []string{"check", capFile, "--model", m} }},
		{"hsdb diff", func(m string) []string { return []string{"diff", capFile, "--model", m} }},
	}
	cases := []struct {
		flags []string
		want  string
	}{
		{[]string{"--tp", "3"}, "num_attention_heads 8 is not divisible by --tp 3"},
		{[]string{"--load-layers", "9-12"}, "--load-layers 9-12: the model has decoder layers 0-4 (num_hidden_layers 5)"},
		{[]string{"--ep"}, "--ep: LlamaForCausalLM has no routed experts"},
		{[]string{"--pp", "7", "--workers"}, "--pp 7: the model has 5 decoder layers; every stage needs at least one"},
		{[]string{"--pp", "2", "--workers", "--load-layers", "0-1"}, "--pp 2 with --load-layers 0-1: each stage's layers come from --pp; give one or the other"},
	}
	for _, c := range cmds {
		for _, k := range cases {
			args := append(c.args("embedded"), k.flags...)
			if c.name == "hsdb plan" { // plan has no --workers: it plans the stages without starting any
				args = without(args, "--workers")
			}
			out, errs, code := runHsdb(t, args...)
			want := c.name + ": embedded:stories260K: " + k.want + "\n"
			if code != 2 || errs != want {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errs, want)
			}
		}
		// before the load: a directory with config.json alone (the llama
		// fixture's 8 heads) is refused on its config, no weight named
		dir := configOnlyDir(t, "llama")
		args := append(c.args(dir), "--tp", "3")
		_, errs, code := runHsdb(t, args...)
		if want := c.name + ": " + dir + ": num_attention_heads 8 is not divisible by --tp 3\n"; code != 2 || errs != want {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", args, code, errs, want)
		}
	}
	// --pp without workers to run its stages: usage too, where a model loads
	for _, c := range cmds {
		if c.name == "hsdb plan" {
			continue
		}
		args := append(c.args("embedded"), "--pp", "3", "--device", "cpu")
		_, errs, code := runHsdb(t, args...)
		if want := c.name + ": --pp 3: pipeline stages run in workers: add --workers (or --listen ADDR)\n"; code != 2 || errs != want {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", args, code, errs, want)
		}
	}
}

// TestCaptureLoadLayersFromMiddle: capture --load-layers 2-3 (a range not
// from layer 0) computes nothing that is the model's hidden states (layer 2
// receives the embeddings): refused before the load as a usage error (exit
// 2), with the Capturer's words. It exited 1 after loading the model.
func TestCaptureLoadLayersFromMiddle(t *testing.T) {
	dir := configOnlyDir(t, "llama") // no weights: a load would fail first
	out, errs, code := runHsdb(t, "capture", "--model", dir, "--load-layers", "1-2", "--layers", "2", "--ids", "1,2", "--out", filepath.Join(t.TempDir(), "o"))
	want := "hsdb capture: invalid capture: only decoder layers 1-2 are loaded (--load-layers 1-2): layer 1 receives the embeddings instead of layer 0's output"
	if code != 2 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q…", code, out, errs, want)
	}
}

// without returns args without the flag f.
func without(args []string, f string) []string {
	var out []string
	for _, a := range args {
		if a != f {
			out = append(out, a)
		}
	}
	return out
}

// TestCaptureLoadRangeBeforeLoad: capture with a --load-layers range that
// cannot record the plan is refused before the load (exit 2): a captured
// layer outside it ("the model has no site model.layers.2" after loading,
// exit 1), and SpecForge's hidden_state (model.norm) from a range short of
// the last layer (written as the model's, exit 0). The directory holds
// the llama fixture's config.json alone (3 layers): a load would fail
// first.
func TestCaptureLoadRangeBeforeLoad(t *testing.T) {
	dir := configOnlyDir(t, "llama")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--load-layers", "0-1", "--layers", "2"}, "hsdb capture: invalid capture: layer 2 is not loaded (--load-layers 0-1): its output cannot be captured; load through it (--load-layers 0-2) or the whole model\n"},
		{[]string{"--load-layers", "0-1", "--format", "specforge", "--layers", "0,1,1"}, ""}, // a plan error of its own, said first
	} {
		args := append([]string{"capture", "--model", dir, "--ids", "1,2", "--out", filepath.Join(t.TempDir(), "o")}, c.args...)
		_, errs, code := runHsdb(t, args...)
		if code != 2 || (c.want != "" && errs != c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errs, c.want)
		}
	}
	// stories260K has 5 layers: SGLang ids 0,1,2 fit --load-layers 0-2,
	// its final norm does not
	args := []string{"capture", "--load-layers", "0-2", "--format", "specforge", "--layers", "0,1,2", "--ids", "1,2", "--out", filepath.Join(t.TempDir(), "o")}
	_, errs, code := runHsdb(t, args...)
	want := "hsdb capture: invalid capture: only decoder layers 0-2 of 0-4 are loaded (--load-layers 0-2): model.norm follows layer 2's output instead of layer 4's, so what it computes is not the model's; load through the last layer (--load-layers 0-4) or the whole model\n"
	if code != 2 || errs != want {
		t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", args, code, errs, want)
	}
}
