package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
)

// TestConvertHelp: `hsdb --help` says "hsdb CMD --help lists a command's
// flags", but `hsdb convert --help` exited 2 with a one-line usage and no
// flags, and `hsdb convert llama2c --help` said "the checkpoint IN.bin
// comes first". Both now print the usage (with the second --tokenizer the
// top-level help shows) and convert's three flags, and exit 0.
func TestConvertHelp(t *testing.T) {
	for _, args := range [][]string{{"convert", "--help"}, {"convert", "-h"}, {"convert", "llama2c", "--help"}} {
		var out, errOut bytes.Buffer
		if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Errorf("%v: exit %d, want 0; stderr %q", args, code, errOut.String())
			continue
		}
		got := out.String()
		for _, w := range []string{"usage: hsdb convert llama2c IN.bin --tokenizer tok.bin [--tokenizer tok.model] --out DIR [--force]", "  --force ", "  --out string ", "  --tokenizer file "} {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q missing from:\n%s", args, w, got)
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"convert"}, stdio{Out: &out, Err: &errOut}); code != 2 {
		t.Errorf("convert alone: exit %d, want 2 (a usage error)", code)
	}
}

// TestFlagHelpAligned: a flag whose "--name TYPE" is longer than 22
// characters ("--worker-timeout duration", 25) pushed its meaning out of
// the column every other flag's meaning starts in. In `hsdb capture
// --help` every meaning now starts at column 2 + 25 + 1 = 28 (the longest
// "--name TYPE" there, counted by hand, plus the indent and one space).
func TestFlagHelpAligned(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"capture", "--help"}, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	n := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(l, "  -") {
			continue
		}
		n++
		if len(l) < 29 || l[27] != ' ' || l[28] == ' ' {
			t.Errorf("meaning not at column 28: %q", l)
		}
	}
	if n < 20 {
		t.Fatalf("%d flag lines in:\n%s", n, out.String())
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

// TestDiffHelpNoNoModel: `hsdb diff --help` listed --no-model, which diff
// refuses ("diff compares the capture with hsdb's own forward pass, which
// needs the model"); check's help keeps it, and diff still names it when
// given.
func TestDiffHelpNoNoModel(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want bool
	}{{"diff", false}, {"check", true}} {
		var out, errOut bytes.Buffer
		if code := hsdbMain([]string{c.cmd, "--help"}, stdio{Out: &out, Err: &errOut}); code != 0 {
			t.Fatalf("%s --help: exit %d", c.cmd, code)
		}
		if got := strings.Contains(out.String(), "--no-model"); got != c.want {
			t.Errorf("%s --help lists --no-model: %v, want %v\n%s", c.cmd, got, c.want, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"diff", "x.pt", "--model", "../../testdata/hf/llama", "--no-model"}, stdio{Out: &out, Err: &errOut}); code != 2 || !strings.Contains(errOut.String(), "--no-model: diff compares the capture with hsdb's own forward pass") {
		t.Errorf("diff --no-model: exit %d, stderr %q", code, errOut.String())
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
