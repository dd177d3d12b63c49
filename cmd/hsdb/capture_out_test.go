package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
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

// TestCaptureOutCheckedBeforeLoad: `hsdb capture --out D` where D is a
// directory hsdb did not write loaded the model, read --data and printed
// the layer mapping, and only then refused D: for DeepSeek-V3 at --tp 8
// minutes of loading to learn what the directory already said. --out is
// now judged before the model loads: with a --model that cannot load at
// all, the answer is still about D. (A dump hsdb wrote goes on to the
// load: whether it is the same job, finished before and then verified, or
// another needs the model's identity; TestCaptureRerunComplete.)
func TestCaptureOutCheckedBeforeLoad(t *testing.T) {
	dir := t.TempDir()
	other := dir + "/other"
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(other+"/notes.txt", "mine\n"); err != nil {
		t.Fatal(err)
	}
	missing := dir + "/no-such-model"
	var out, errOut bytes.Buffer
	code := hsdbMain([]string{"capture", "--model", missing, "--layers", "0,1", "--ids", "1,5,7", "--out", other}, stdio{Out: &out, Err: &errOut})
	want := "dump " + other + ": exists and is not an hsdb dump"
	if code != 1 || !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "no-such-model") {
		t.Errorf("--out %s: exit %d, stderr %q; want 1 and %q before the model is opened", other, code, errOut.String(), want)
	}
}

// TestCaptureLayersCheckedBeforeLoad: a --layers that the model cannot
// take was refused only after the checkpoint loaded. It is judged on
// config.json first: testdata/configs/deepseek-v3 holds DeepSeek-V3's
// config.json alone (61 decoder layers, so hsdb layers 0..60, by hand),
// and --layers 2,30,58,61 is refused naming that range, not the missing
// weights; 2,30,58,60 gets past the check to the load, which then names
// them.
func TestCaptureLayersCheckedBeforeLoad(t *testing.T) {
	for _, c := range []struct {
		layers string
		code   int
		want   string
	}{
		{"2,30,58,61", 2, "--layers 61: hsdb layers are decoder layers 0..60"},
		{"2,30,58,60", 1, "no *.safetensors in"},
	} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{"capture", "--model", "../../testdata/configs/deepseek-v3", "--layers", c.layers, "--ids", "1,2", "--out", t.TempDir() + "/d"}, stdio{Out: &out, Err: &errOut})
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("--layers %s: exit %d, stderr %q; want %d and %q", c.layers, code, errOut.String(), c.code, c.want)
		}
	}
}

// TestCaptureTextRowNoTokenizer: a --data row {"text": ...} on a model
// without a tokenizer was refused as "needs the model's tokenizer, which
// was not found", naming neither the directory nor the files looked for,
// which `input text` names. testdata/hf/llama holds no tokenizer file.
func TestCaptureTextRowNoTokenizer(t *testing.T) {
	data := t.TempDir() + "/t.jsonl"
	if err := writeFile(data, `{"text": "hello"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := hsdbMain([]string{"capture", "--model", "../../testdata/hf/llama", "--layers", "0,1", "--data", data, "--out", t.TempDir() + "/d"}, stdio{Out: &out, Err: &errOut})
	want := data + `:1: a "text" row needs the model's tokenizer, and it has none: no tokenizer in ../../testdata/hf/llama (looked for tokenizer.json, tiktoken.model, tokenizer.model, tokenizer.bin); give input_ids rows instead`
	if code != 2 || !strings.Contains(errOut.String(), want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut.String(), want)
	}
}

// TestCaptureKimiTextNoBOS: a --data row {"text": ...} on a Kimi model
// (tiktoken.model) was captured as [BOS] + the text's ids; Kimi's HF
// tokenizer adds no [BOS] (tokenizer.TextBOS), so the sample held a row
// vLLM never runs, and every later row attended to it. The model directory
// is the DeepSeek-V3 fixture with embed_tokens and lm_head padded to
// testdata/tiktoken/kimi_tiny's 576 ids, and kimi_tiny's config.json,
// tiktoken.model and tokenizer_config.json (as engine's
// TestKimiTiktokenDirectory builds it). The ids are OpenAI tiktoken's for
// the text (engine/tokenizer/testdata/tiktoken.expected.json, kimi_tiny
// run, written by scripts/tiktoken_reference.py), with no 320 ([BOS]).
func TestCaptureKimiTextNoBOS(t *testing.T) {
	dir := enginetest.KimiTinyDir(t, "../../testdata")
	data := t.TempDir() + "/t.jsonl"
	if err := writeFile(data, `{"text": "She loved to play outside in the park."}`+"\n"); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/d"
	var stdout, stderr bytes.Buffer
	if code := hsdbMain([]string{"capture", "--model", dir, "--layers", "0,1", "--data", data, "--out", out}, stdio{Out: &stdout, Err: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := safetensors.Open(out + "/seq_000000.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids, err := f.Tensor("input_ids")
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{50, 71, 68, 220, 75, 78, 85, 291, 311, 281, 75, 64, 88, 220, 283, 83, 82, 307, 68, 304, 279, 281, 277, 74, 13}
	got := make([]int64, ids.Shape[0])
	for i := range got {
		got[i] = ids.Int(i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("input_ids %v\nwant (tiktoken, no [BOS]) %v", got, want)
	}
}

// TestCaptureJSONFailureNotes: `hsdb capture --json` wrote "notes": [] for
// a finished job and "notes": null for a refused one; a script reading
// len(obj["notes"]) failed on the second. Both are a list now.
func TestCaptureJSONFailureNotes(t *testing.T) {
	var out, errOut bytes.Buffer
	code := hsdbMain([]string{"capture", "--layers", "9", "--ids", "1,2", "--out", t.TempDir() + "/d", "--json"}, stdio{Out: &out, Err: &errOut})
	var obj map[string]any
	if err := json.Unmarshal(out.Bytes(), &obj); err != nil || code != 2 {
		t.Fatalf("exit %d, stdout %q: %v", code, out.String(), err)
	}
	if notes, ok := obj["notes"].([]any); !ok || len(notes) != 0 {
		t.Errorf("notes %#v, want []", obj["notes"])
	}
}
