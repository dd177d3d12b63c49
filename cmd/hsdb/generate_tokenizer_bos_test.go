package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// qwenLikeTokenizer is a byte-level BPE tokenizer.json laid out as Qwen's
// for testdata/hf/llama's vocab_size 101: its vocabulary is the 94
// printable ASCII characters, id i being the character 0x21+i ('!'
// through '~', which the byte-level alphabet keeps as they are), no
// merges, and <|endoftext|> a special added token at id 100 after them
// (Qwen2's 151643); ids 94-99 are none. Its tokenizer_config.json, as
// Qwen2's, has bos_token null and eos_token <|endoftext|>: the tokenizer
// has no BOS of its own.
func qwenLikeTokenizer(t *testing.T) []byte {
	t.Helper()
	vocab := map[string]int{}
	for i := range 94 {
		vocab[string(rune(0x21+i))] = i
	}
	tok := map[string]any{
		"added_tokens":   []map[string]any{{"id": 100, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{}},
		"decoder": map[string]any{"type": "ByteLevel"},
	}
	b, err := json.Marshal(tok)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withQwenLikeTokenizer writes qwenLikeTokenizer and its
// tokenizer_config.json into dir (an eosFixture: testdata/hf/llama's
// weights) and returns dir.
func withQwenLikeTokenizer(t *testing.T, dir string) string {
	t.Helper()
	for name, data := range map[string][]byte{"tokenizer.json": qwenLikeTokenizer(t),
		"tokenizer_config.json": []byte(`{"bos_token": null, "eos_token": "<|endoftext|>"}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestGenerateTokenizerWithoutBOSStartsFromConfigBOS: `hsdb generate`
// without --prompt or --ids beside a tokenizer that has no BOS (Qwen's:
// tokenizer_config.json's bos_token is null) starts from the model's
// bos_token_id, generation_config.json's over config.json's, as HF's
// generate starts from it without input ids (Qwen2's config.json says
// 151643). It refused with exit 2 ("the tokenizer has no BOS token"). The
// start ids are read by hand from the files written here (config.json 2,
// generation_config.json 5: ids of the vocabulary, as the fixture's
// weights continue 100 with 100 alone, which would stop at once at the
// tokenizer's EOS); the ids generated are those of --ids with that id, and
// the text printed is theirs by hand from the tokenizer's vocabulary (id
// i < 94 is the character 0x21+i; 100 and the ids between print nothing),
// the start id ('#' or '&') not printed, as run.c does not print BOS. With no bos_token_id anywhere the refusal stays, naming the
// field and config.json.
func TestGenerateTokenizerWithoutBOSStartsFromConfigBOS(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  string
		want int32
	}{
		{"config.json", withQwenLikeTokenizer(t, eosFixture(t, "2", "", "")), 2},
		{"generation_config.json over config.json", withQwenLikeTokenizer(t, eosFixture(t, "2", "", `{"bos_token_id": 5}`)), 5},
	} {
		prompt, ids := generateJSON(t, c.dir, "-n", "8")
		if !slices.Equal(prompt, []int32{c.want}) {
			t.Errorf("%s: prompt_ids %v, want [%d]", c.name, prompt, c.want)
			continue
		}
		if _, fromIDs := generateJSON(t, c.dir, "-n", "8", "--ids", itoaJSON(c.want)); !slices.Equal(ids, fromIDs) {
			t.Errorf("%s: ids %v; --ids %d gives %v", c.name, ids, c.want, fromIDs)
		}
		var text strings.Builder
		for _, id := range ids {
			if id >= 0 && id < 94 {
				text.WriteByte(byte(0x21 + id))
			}
		}
		if text.Len() == 0 {
			t.Fatalf("%s: ids %v print nothing: the text printed is not checked", c.name, ids)
		}
		out, errs, code := runHsdb(t, "generate", "--model", c.dir, "-n", "8")
		if code != 0 || out != text.String()+"\n" {
			t.Errorf("%s: exit %d, stdout %q, want %q (ids %v; stderr %q)", c.name, code, out, text.String()+"\n", ids, errs)
		}
	}
	none := withQwenLikeTokenizer(t, eosFixture(t, "", "", ""))
	out, errs, code := runHsdb(t, "generate", "--model", none, "-n", "3", "--json")
	var res struct {
		Error string `json:"error"`
		Exit  int    `json:"exit"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("no bos_token_id: %v: stdout %q, stderr %q", err, out, errs)
	}
	if code != 2 || res.Exit != 2 || !strings.Contains(res.Error, "the tokenizer has no BOS token and "+filepath.Join(none, "config.json")+" sets no bos_token_id") ||
		!strings.Contains(res.Error, "give --prompt or --ids") {
		t.Errorf("no bos_token_id: exit %d, %+v", code, res)
	}
}
