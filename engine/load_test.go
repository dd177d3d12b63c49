package engine

import (
	"encoding/json"
	"hsdb/engine/enginetest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/llama2c"
	"hsdb/engine/safetensors"
)

// TestConvertedEqualsLlama2C: `hsdb convert llama2c` output, loaded through
// the safetensors path, and the embedded default give exactly the logits of
// the in-memory conversion of the same checkpoint.
func TestConvertedEqualsLlama2C(t *testing.T) { forEachDevice(t, testConvertedEqualsLlama2C) }

func testConvertedEqualsLlama2C(t *testing.T, dev string) {
	dir := filepath.Join(t.TempDir(), "stories")
	if err := llama2c.Convert(storiesBin, []string{"../testdata/stories260K/tok512.bin"}, dir, false); err != nil {
		t.Fatal(err)
	}
	if err := llama2c.Convert(storiesBin, nil, dir, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second convert without force: %v", err)
	}
	ref, err := loadStoriesOn(t, dev, 1).Prefill(prompts, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() (*Engine, error){
		func() (*Engine, error) { return Open(dir, Options{TP: 2, Device: dev}) },
		func() (*Engine, error) { return Open("", Options{Device: dev}) },
	} {
		e, err := open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Prefill(prompts, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.CheckClose(got.Values.F32(), ref.Values.F32(), relTol(dev)); err != nil {
			t.Errorf("%s: logits rel diff %v", e.Path, err)
		}
		e.Close()
	}
}

// TestOpenErrors: a path that is neither a model directory nor a
// checkpoint is named with what was expected.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "nope"), Options{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing: %v", err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("empty dir: %v", err)
	}
	txt := filepath.Join(dir, "weights.txt")
	if err := os.WriteFile(txt, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(txt, Options{}); err == nil || !strings.Contains(err.Error(), "expected a directory") {
		t.Errorf("txt: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures":["GPT2LMHeadModel"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("gpt2: %v", err)
	}
}

// TestBadTokenizerIsAnError: a model directory whose tokenizer file does
// not parse loads, and Tokenizer returns the parse error (regression: a
// typed nil pointer panicked at VocabSize).
func TestBadTokenizerIsAnError(t *testing.T) {
	for _, name := range []string{"tokenizer.json", "tiktoken.model", "tokenizer.model", "tokenizer.bin"} {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "model.safetensors"} {
			data, err := os.ReadFile("../testdata/hf/llama/" + f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("garbage{"), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := e.Tokenizer()
		if tok != nil || err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: tokenizer %v, err %v", name, tok, err)
		}
		e.Close()
	}
}

// TestUnusedTensorsReported: a Qwen3 checkpoint loaded as Llama (its
// architectures edited) loads, but its q_norm/k_norm weights are reported as
// unused; a checkpoint read whole reports nothing.
func TestUnusedTensorsReported(t *testing.T) {
	dir := t.TempDir()
	cfg, err := os.ReadFile("../testdata/hf/qwen3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "Qwen3ForCausalLM", "LlamaForCausalLM", 1))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.ReadFile("../testdata/hf/qwen3/model.safetensors")
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(e.Report.Unused) != 2*3 || !strings.HasSuffix(e.Report.Unused[0], "self_attn.k_norm.weight") {
		t.Fatalf("unused %v", e.Report.Unused)
	}
	q, err := Open("../testdata/hf/qwen3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if len(q.Report.Unused) != 0 {
		t.Fatalf("qwen3 as itself: unused %v", q.Report.Unused)
	}
}

// TestBrokenIndexNamesTheShard: a sharded checkpoint whose index names a
// tensor its shard lacks fails with that fact (file and tensor), not with an
// unrelated "missing tensor" (regression).
func TestBrokenIndexNamesTheShard(t *testing.T) {
	src, err := safetensors.Open("../testdata/hf/llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	var a, b []safetensors.Named
	weightMap := map[string]string{}
	for i, n := range src.Names() {
		x, _ := src.Tensor(n)
		if i%2 == 0 {
			a, weightMap[n] = append(a, safetensors.Named{Name: n, T: x}), "model-00001-of-00002.safetensors"
		} else {
			b, weightMap[n] = append(b, safetensors.Named{Name: n, T: x}), "model-00002-of-00002.safetensors"
		}
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), a, nil); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), b, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile("../testdata/hf/llama/config.json")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	writeIndex := func(m map[string]string) {
		idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": m})
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeIndex(weightMap)
	e, err := Open(dir, Options{TP: 2})
	if err != nil {
		t.Fatalf("a good sharded checkpoint: %v", err)
	}
	e.Close()
	weightMap["foo.bar"] = "model-00001-of-00002.safetensors"
	writeIndex(weightMap)
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "foo.bar") || !strings.Contains(err.Error(), "model-00001-of-00002.safetensors") {
		t.Fatalf("err = %v", err)
	}
}
