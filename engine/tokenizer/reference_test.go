package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// expectedFile is what scripts/tokenizer_reference.py writes: the reference
// library's ids and decoded text for every line of testdata/strings.txt.
type expectedFile struct {
	Name            string `json:"name"`
	Kind            string `json:"kind"`
	Library         string `json:"library"`
	Version         string `json:"version"`
	StringsSHA256   string `json:"strings_sha256"`
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	VocabSize       int    `json:"vocab_size_with_added"`
	BOS             *int32 `json:"bos_id"`
	EOS             *int32 `json:"eos_id"`
	Cases           []struct {
		Text    string  `json:"text"`
		IDs     []int32 `json:"ids"`
		Decoded *string `json:"decoded"`
		Error   string  `json:"error"`
	} `json:"cases"`
}

// loadExpected reads testdata/<name>.expected.json (in git), failing when
// it is missing (a skip would let the comparison pass unseen) or was made
// from another strings.txt.
func loadExpected(t *testing.T, name string) *expectedFile {
	t.Helper()
	path := filepath.Join("testdata", name+".expected.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is missing; regenerate it: %s", path, referenceScript)
	}
	if err != nil {
		t.Fatal(err)
	}
	var e expectedFile
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got := fileSHA256(t, "testdata/strings.txt"); e.StringsSHA256 != got {
		t.Fatalf("%s was made from a strings.txt with sha256 %s, the current one is %s; rerun: %s", path, e.StringsSHA256, got, referenceScript)
	}
	if n := len(testStrings(t)); len(e.Cases) != n {
		t.Fatalf("%s has %d cases, strings.txt %d lines", path, len(e.Cases), n)
	}
	t.Logf("%s: %s %s, %d cases", path, e.Library, e.Version, len(e.Cases))
	return &e
}

// compareWithReference checks Encode and Decode of tk against every case
// and reports all mismatches (up to 20) in one failure.
func compareWithReference(t *testing.T, tk Tokenizer, e *expectedFile) {
	t.Helper()
	var bad []string
	if e.VocabSize != 0 && tk.VocabSize() != e.VocabSize {
		bad = append(bad, fmt.Sprintf("VocabSize %d, reference %d", tk.VocabSize(), e.VocabSize))
	}
	if e.BOS != nil && tk.BOS() != *e.BOS {
		bad = append(bad, fmt.Sprintf("BOS %d, reference %d", tk.BOS(), *e.BOS))
	}
	if e.EOS != nil && tk.EOS() != *e.EOS {
		bad = append(bad, fmt.Sprintf("EOS %d, reference %d", tk.EOS(), *e.EOS))
	}
	for i, c := range e.Cases {
		if c.Error != "" {
			bad = append(bad, fmt.Sprintf("case %d %q: the reference failed: %s", i, c.Text, c.Error))
			continue
		}
		got, err := tk.Encode(c.Text)
		if err != nil || !slices.Equal(got, c.IDs) {
			bad = append(bad, fmt.Sprintf("case %d %q:\n  got  %v %v\n  want %v", i, c.Text, got, err, c.IDs))
		}
		if c.Decoded != nil {
			if d := tk.Decode(c.IDs); d != *c.Decoded {
				bad = append(bad, fmt.Sprintf("case %d Decode(%v) = %q, want %q", i, c.IDs, d, *c.Decoded))
			}
		}
	}
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
		}
		t.Errorf("%s differs from %s %s in %d places:\n%s", tk.Name(), e.Library, e.Version, len(bad), joinLines(bad))
	}
}

func joinLines(s []string) string {
	out := ""
	for _, l := range s {
		out += l + "\n"
	}
	return out
}

func TestReferenceHF(t *testing.T) {
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		t.Run(name, func(t *testing.T) {
			e := loadExpected(t, name)
			path := hfTestFile(t, name)
			if got := fileSHA256(t, path); e.TokenizerSHA256 != got {
				t.Fatalf("reference made from a tokenizer.json with sha256 %s, testdata has %s", e.TokenizerSHA256, got)
			}
			compareWithReference(t, loadHFTest(t, name), e)
		})
	}
}

// TestReferenceSentencePiece compares the SentencePiece type with
// sentencepiece's own ids for tok512.model, and the llama2.c tokenizer with
// them on spCanonical strings (see TestSentencePieceMatchesLlama2C).
func TestReferenceSentencePiece(t *testing.T) {
	e := loadExpected(t, "tok512")
	if got := fileSHA256(t, "testdata/tok512.model"); e.TokenizerSHA256 != got {
		t.Fatalf("reference made from a tok512.model with sha256 %s, testdata has %s", e.TokenizerSHA256, got)
	}
	compareWithReference(t, loadSentencePieceTest(t), e)
	l2 := loadLlama2CTest(t)
	for _, c := range e.Cases {
		if got, _ := l2.Encode(spCanonical(c.Text)); c.Error == "" && !slices.Equal(got, c.IDs) {
			t.Errorf("llama2.c Encode(%q) = %v, sentencepiece gives %v for %q", spCanonical(c.Text), got, c.IDs, c.Text)
		}
	}
}

// TestReferenceHFEncodeMax: HF's EncodeMax (through EncodeAtMost) gives
// HF tokenizers' ids of every reference case when bounded by their count,
// and refuses each case of more than one id when bounded by one less,
// with ErrTooManyTokens naming the bound.
func TestReferenceHFEncodeMax(t *testing.T) {
	e := loadExpected(t, "qwen3")
	tk := loadHFTest(t, "qwen3")
	for i, c := range e.Cases {
		if c.Error != "" {
			continue
		}
		if ids, err := EncodeAtMost(tk, c.Text, len(c.IDs)); err != nil || !slices.Equal(ids, c.IDs) {
			t.Errorf("case %d, max %d: %v, %v; want %v", i, len(c.IDs), ids, err, c.IDs)
		}
		if len(c.IDs) < 2 {
			continue
		}
		want := fmt.Sprintf("too many tokens: more than %d in a text of %d bytes", len(c.IDs)-1, len(c.Text))
		if ids, err := EncodeAtMost(tk, c.Text, len(c.IDs)-1); !errors.Is(err, ErrTooManyTokens) || !strings.Contains(err.Error(), want) {
			t.Errorf("case %d, max %d: %v, %v; want ErrTooManyTokens: %s", i, len(c.IDs)-1, ids, err, want)
		}
	}
}
