package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestCaptureOutTrailingSlash: README's own `capture ... --out dump/`
// staged the job in "dump/.partial" (the path with the suffix appended
// after the slash), i.e. inside dump, so at the end dump existed without
// a manifest and the finished job was refused ("--force replaces only a
// dump hsdb wrote: not an hsdb dump: dump has no hsdb manifest"), exit 1
// with nothing written. Now DIR/ names DIR: the job is staged in
// DIR.partial and renamed to DIR, which holds the manifest and one file
// per sequence (2 here, as --ids gives 2 sequences).
func TestCaptureOutTrailingSlash(t *testing.T) {
	for format, layers := range map[string]string{"hsdb": "0,1", "speculators": "1,2"} {
		dir := filepath.Join(t.TempDir(), "dump")
		stdout, errs, code := runHsdb(t, "capture", "--format", format, "--layers", layers, "--ids", "1,403,407;1,400", "--out", dir+"/")
		if code != 0 {
			t.Fatalf("--format %s --out %s/: exit %d\n%s\n%s", format, dir, code, stdout, errs)
		}
		m, err := capture.ReadManifest(dir)
		if err != nil {
			t.Fatalf("--format %s: %v", format, err)
		}
		if len(m.Sequences) != 2 {
			t.Errorf("--format %s: manifest lists %d sequences, want 2", format, len(m.Sequences))
		}
		if _, err := os.Lstat(filepath.Join(dir, capture.PartialSuffix)); err == nil {
			t.Errorf("--format %s: %s/%s left inside the dump", format, dir, capture.PartialSuffix)
		}
		if _, err := os.Lstat(dir + capture.PartialSuffix); err == nil {
			t.Errorf("--format %s: %s%s left beside the dump", format, dir, capture.PartialSuffix)
		}
	}
}

// TestGenerateIDsPasteBack: without a tokenizer `hsdb generate` printed the
// generated ids as Go prints a slice ("[32 32 12]"), which --ids refuses;
// it prints them as --ids takes them: -n 5 from a 3-token prompt runs
// positions 0-4 and samples positions 3, 4 and 5 (run.c's -n counts the
// prompt), so 3 ids separated by commas, which --ids then parses.
func TestGenerateIDsPasteBack(t *testing.T) {
	out, errs, code := runHsdb(t, "generate", "--model", "../../testdata/hf/llama", "--ids", "1,2,3", "-n", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	line := strings.TrimSuffix(out, "\n")
	if !regexp.MustCompile(`^[0-9]+,[0-9]+,[0-9]+$`).MatchString(line) {
		t.Fatalf("generate printed %q, want 3 comma-separated ids", out)
	}
	if _, err := parseIDs(line); err != nil {
		t.Errorf("--ids refuses what generate printed: %v", err)
	}
}

// TestCheckSquareSpeculatorsFile: a speculators sample as long as its
// number of ids (3 tokens, speculators ids 1,2,3) is hidden_states [3, 3,
// hidden], whose axis order its shape cannot decide; hsdb's own writer
// marks it (convention speculators, layer_ids), which says [seq, n_ids,
// hidden], yet check refused it as undecidable ("not guessed": exit 2,
// "nothing comparable") right after capture wrote and validated it. Now
// the mark decides and the sample matches the model (exit 0), as the
// 4-token sample beside it does.
func TestCheckSquareSpeculatorsFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hs")
	const model = "../../testdata/hf/llama"
	if out, errs, code := runHsdb(t, "capture", "--model", model, "--format", "speculators", "--layers", "1,2,3", "--ids", "1,5,6;1,9,10,11", "--out", dir); code != 0 {
		t.Fatalf("capture: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code := runHsdb(t, "check", filepath.Join(dir, "hs_0.safetensors"), "--model", model)
	if code != 0 || !strings.Contains(out, "verdict: valid") {
		t.Fatalf("check of the 3-token sample: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = runHsdb(t, "check", dir, "--model", model, "--summary")
	if code != 0 || !strings.Contains(out, "2  valid") {
		t.Fatalf("check of the dump: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestCaptureSummaryListsAsTyped: capture's summary line wrote ids and
// layers as Go prints a slice and the dtype in safetensors' spelling
// ("speculators ids [1 2 3] (hsdb layers [0 1 2]), BF16"); it writes them
// as --layers and --dtype take them: speculators ids 1,2,3 are hsdb layers
// 0,1,2 (id k = layer k-1's output), bf16 by default.
func TestCaptureSummaryListsAsTyped(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := runHsdb(t, "capture", "--format", "speculators", "--layers", "1,2,3", "--ids", "1,403,407", "--out", filepath.Join(dir, "s"))
	if code != 0 || !strings.Contains(out, "speculators ids 1,2,3 (hsdb layers 0,1,2), bf16,") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = runHsdb(t, "capture", "--layers", "0,2", "--ids", "1,403,407", "--out", filepath.Join(dir, "h"))
	if code != 0 || !strings.Contains(out, "layers 0,2 (stream), f32,") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestScriptMissingBeforeLoad: `hsdb --model DIR -x typo.hsdb` loaded the
// whole model (minutes for DeepSeek-V3) and only then failed, naming
// `source` ("source: open typo.hsdb: ..."), a command the user never
// typed. The script is looked at first: with a model that cannot load
// either, the error is the script's, naming -x; a directory is refused too.
func TestScriptMissingBeforeLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.hsdb")
	_, errs, code := runHsdb(t, "--model", filepath.Join(dir, "no-model"), "-x", missing)
	if code != 1 || !strings.Contains(errs, "-x: stat "+missing+": no such file or directory") || strings.Contains(errs, "--model") {
		t.Errorf("exit %d, stderr %q; want 1 and the missing script named before any model load", code, errs)
	}
	_, errs, code = runHsdb(t, "-x", dir)
	if code != 1 || !strings.Contains(errs, "-x "+dir+": is a directory, not a script") {
		t.Errorf("-x DIR: exit %d, stderr %q", code, errs)
	}
}

// TestCaptureOutMissingParent: README's `--out cache/hidden_states/`
// (SpecForge's layout) on a fresh machine failed with the lock file's
// error ("lock cache/.hidden_states.lock: open ...: no such file or
// directory"); missing parents are made, and a parent that is a file is
// named as such.
func TestCaptureOutMissingParent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cache", "hidden_states")
	stdout, errs, code := runHsdb(t, "capture", "--format", "specforge", "--compress", "--layers", "0,1,2", "--ids", "1,403,407;1,400", "--out", out+"/")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
	}
	for _, f := range []string{"manifest.json", "rows_0-2000/data_0.ckpt.gz", "rows_0-2000/data_1.ckpt.gz"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%v", err)
		}
	}
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = runHsdb(t, "capture", "--layers", "1", "--ids", "1,2", "--out", filepath.Join(file, "d"))
	if code != 1 || !strings.Contains(errs, "creating its parent directory: mkdir "+file+": not a directory") {
		t.Errorf("parent is a file: exit %d, stderr %q", code, errs)
	}
}

// TestCheckLayersInFormatIDs: a user who captured with --format
// speculators --layers 1,2,3 and checks with the same --layers got
// "labelled layers 0,1,2, requested 1,2,3" and no word on why; check's
// --layers are hsdb layers (speculators id k = hsdb layer k-1's output,
// README), so the failure now names the file's speculators ids and the
// --layers that means them: 0,1,2, which passes.
func TestCheckLayersInFormatIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hs")
	const model = "../../testdata/hf/llama"
	if out, errs, code := runHsdb(t, "capture", "--model", model, "--format", "speculators", "--layers", "1,2,3", "--ids", "1,5,6,7", "--out", dir); code != 0 {
		t.Fatalf("capture: exit %d\n%s\n%s", code, out, errs)
	}
	file := filepath.Join(dir, "hs_0.safetensors")
	out, _, code := runHsdb(t, "check", file, "--model", model, "--layers", "1,2,3")
	want := "1,2,3 are this file's speculators ids (id k = hsdb layer k-1's output, id 0 the embeddings), and check's --layers are hsdb layers: --layers 0,1,2"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("--layers 1,2,3: exit %d, want 1 and %q in\n%s", code, want, out)
	}
	if out, _, code = runHsdb(t, "check", file, "--model", model, "--layers", "0,1,2"); code != 0 {
		t.Errorf("--layers 0,1,2: exit %d\n%s", code, out)
	}
	if out, _, _ = runHsdb(t, "check", file, "--model", model, "--layers", "0,2,1"); strings.Contains(out, "speculators ids") {
		t.Errorf("--layers 0,2,1 (not the file's ids) names them:\n%s", out)
	}
}

// TestEPAndMoETPContradict: `--ep --moe tp` asks for whole experts per
// rank and for each expert split over the ranks at once; it was taken
// silently (--ep won). It is refused naming both, in every command of the
// model group; each alone is taken.
func TestEPAndMoETPContradict(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3"
	want := "--ep and --moe tp contradict each other"
	for _, args := range [][]string{
		{"--model", model, "--tp", "2", "--ep", "--moe", "tp", "-x", os.DevNull},
		{"plan", "--model", model, "--tp", "2", "--ep", "--moe", "tp"},
		{"generate", "--model", model, "--tp", "2", "--ep", "--moe", "tp", "--ids", "1,2", "-n", "3"},
	} {
		if _, errs, code := runHsdb(t, args...); code == 0 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	for _, flags := range [][]string{{"--ep"}, {"--moe", "tp"}, {"--moe", "ep"}} {
		args := append([]string{"plan", "--model", model, "--tp", "2"}, flags...)
		if out, errs, code := runHsdb(t, args...); code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}

// TestGeneratePartialLoadWarns: `hsdb generate --load-layers 1-4` on
// stories260K (layers 0-4) generated from a model missing layer 0, with no
// word, while the debugger notes it at every run and capture refuses it;
// generate now warns on stderr (and in --json "notes"), and a load of
// every layer (0-4) does not.
func TestGeneratePartialLoadWarns(t *testing.T) {
	want := "only decoder layers 1-4 of 0-4 are loaded (--load-layers 1-4)"
	_, errs, code := runHsdb(t, "generate", "--load-layers", "1-4", "-n", "4")
	if code != 0 || !strings.Contains(errs, "hsdb generate: warning: "+want) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	out, _, code := runHsdb(t, "generate", "--load-layers", "1-4", "-n", "4", "--json")
	if code != 0 || !strings.Contains(out, `"notes":["`+want) {
		t.Errorf("--json: exit %d, %s", code, out)
	}
	if _, errs, code = runHsdb(t, "generate", "--load-layers", "0-4", "-n", "4"); code != 0 || errs != "" {
		t.Errorf("every layer loaded: exit %d, stderr %q", code, errs)
	}
}

// TestConvertOutParentAndMessage: `hsdb convert llama2c ... --out
// new/dir` failed with "convert: stat new: no such file or directory"
// (missing parents are made now, as for capture --out), and every
// convert error read "hsdb convert: convert: ...". The converted
// directory then generates llama2.c's documented greedy text
// (testdata/stories260K/expected_greedy.txt).
func TestConvertOutParentAndMessage(t *testing.T) {
	want, err := os.ReadFile("../../testdata/stories260K/expected_greedy.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "new", "dir")
	const bin, tok = "../../testdata/stories260K/stories260K.bin", "../../testdata/stories260K/tok512.bin"
	if o, errs, code := runHsdb(t, "convert", "llama2c", bin, "--tokenizer", tok, "--out", out); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, o, errs)
	}
	text, errs, code := runHsdb(t, "generate", "--model", out, "-n", "20")
	if code != 0 || !strings.HasPrefix(string(want), strings.TrimSuffix(text, "\n")) || len(text) < 10 {
		t.Errorf("generate on the conversion: exit %d %q (stderr %q)", code, text, errs)
	}
	_, errs, code = runHsdb(t, "convert", "llama2c", bin, "--tokenizer", tok, "--out", out)
	if code != 1 || !strings.HasPrefix(errs, "hsdb convert: "+out+" exists") || strings.Contains(errs, "convert: convert:") {
		t.Errorf("second convert: exit %d, stderr %q", code, errs)
	}
}
