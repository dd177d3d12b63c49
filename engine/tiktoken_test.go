package engine

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"hsdb/engine/enginetest"
	"hsdb/engine/tokenizer"
)

// kimiTinyDir is enginetest.KimiTinyDir from this package.
func kimiTinyDir(t *testing.T) string { return enginetest.KimiTinyDir(t, "../testdata") }

// TestKimiTiktokenDirectory: a directory with tiktoken.model and no
// tokenizer.json gets Kimi's tokenizer, whose ids equal OpenAI tiktoken's
// (the kimi_tiny run of engine/tokenizer/testdata/tiktoken.expected.json,
// written by scripts/tiktoken_reference.py) and run through the model, as
// `input text` does (BOS first).
func TestKimiTiktokenDirectory(t *testing.T) {
	e, err := Open(kimiTinyDir(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tok, err := e.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	kimi, ok := tok.(*tokenizer.Tiktoken)
	if !ok {
		t.Fatalf("tokenizer %s (%T), want the Kimi tiktoken tokenizer", tok.Name(), tok)
	}
	if kimi.VocabSize() != 576 || kimi.BOS() != 320 || kimi.EOS() != 321 {
		t.Fatalf("%s: vocab %d, BOS %d, EOS %d; want 576, 320 ([BOS]), 321 ([EOS])", kimi.Name(), kimi.VocabSize(), kimi.BOS(), kimi.EOS())
	}
	var ref struct {
		Texts []string `json:"texts"`
		Runs  []struct {
			Name  string `json:"name"`
			Cases []struct {
				IDs []int32 `json:"ids"`
			} `json:"cases"`
		} `json:"runs"`
	}
	data, err := os.ReadFile("tokenizer/testdata/tiktoken.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	checked := 0
	var seqs [][]int32
	for _, run := range ref.Runs {
		if run.Name != "kimi_tiny" {
			continue
		}
		for i, c := range run.Cases {
			got, err := tok.Encode(ref.Texts[i])
			if err != nil || !slices.Equal(got, c.IDs) {
				t.Errorf("Encode(%q) = %v %v, tiktoken %v", ref.Texts[i], got, err, c.IDs)
			}
			if len(seqs) < 3 && len(c.IDs) > 0 {
				seqs = append(seqs, append([]int32{tok.BOS()}, c.IDs...))
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("tiktoken.expected.json has no kimi_tiny run")
	}
	logits, err := e.Prefill(seqs, nil, false)
	if err != nil || logits == nil {
		t.Fatalf("prefill of %d encoded sequences: %v", len(seqs), err)
	}
}
