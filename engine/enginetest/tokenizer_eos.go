package enginetest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteEOSTokenizer writes into dir a tiny HF byte-level BPE tokenizer
// (tokenizer.json: vocab h 0, i 1, hi 2 with the merge "h i", special
// tokens <s> 3 and </s> 4) whose tokenizer_config.json sets add_bos_token
// and add_eos_token true: transformers' fast tokenizer then rebuilds its
// post_processor as "<s> $A </s>", so tokenizer("hi").input_ids is
// [3, 2, 4] (derived by hand). It fails t when a file cannot be written.
func WriteEOSTokenizer(t testing.TB, dir string) {
	t.Helper()
	const tj = `{"added_tokens": [
    {"id": 3, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 4, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
    "vocab": {"h": 0, "i": 1, "hi": 2}, "merges": ["h i"]},
  "decoder": {"type": "ByteLevel"}}`
	const cfg = `{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true, "add_eos_token": true}`
	for name, data := range map[string]string{"tokenizer.json": tj, "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
