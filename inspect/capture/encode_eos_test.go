package capture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tokenizer"
)

// TestEncodeTextAppendsEOS: a text row (and `input text`) of a tokenizer
// whose tokenizer_config.json says add_bos_token and add_eos_token true
// runs as transformers' tokenizer("hi").input_ids: <s> (3), "hi" (2, the
// h+i merge), </s> (4), derived by hand; and the EOS counts against
// max_position_embeddings: 3 ids fit 3 positions, not 2. Before, the row
// ran as [3 2], unlike what the trainer's tokenizer gives.
func TestEncodeTextAppendsEOS(t *testing.T) {
	dir := t.TempDir()
	tj := `{"added_tokens": [
    {"id": 3, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 4, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
    "vocab": {"h": 0, "i": 1, "hi": 2}, "merges": ["h i"]},
  "decoder": {"type": "ByteLevel"}}`
	cfg := `{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true, "add_eos_token": true}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tj), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadHF(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	ids, why, err := Limits{MaxPositions: 3}.EncodeText(tok, "hi")
	if err != nil || why != "" || !slices.Equal(ids, []int32{3, 2, 4}) {
		t.Errorf("EncodeText(\"hi\") in 3 positions: %v, %q, %v; want [3 2 4]", ids, why, err)
	}
	ids, why, err = Limits{MaxPositions: 2}.EncodeText(tok, "hi")
	if err != nil || !strings.Contains(why, "more than max_position_embeddings 2 tokens with BOS and EOS") {
		t.Errorf("EncodeText(\"hi\") in 2 positions: %v, %q, %v; want it refused naming BOS and EOS", ids, why, err)
	}
}
