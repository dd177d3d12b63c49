package tokenizer

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestHFSequenceNestingBounded: Sequence normalizers and pre-tokenizers
// nested in Sequences were read to any depth: each level decoded again
// (3,000 levels took 1 s) and named in the error's path (51 KB, past the
// 1 KiB a tokenizer error keeps to). Nested more than 16 deep they are
// refused with ErrUnsupported naming the depth; 16 deep (tokenizers' own
// files nest none) still loads. Hand-built files around bosHF's
// ByteLevel pre-tokenizer.
func TestHFSequenceNestingBounded(t *testing.T) {
	base := strings.Replace(bosHF, "POST", byteLevelPost, 1)
	const pre = `"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`
	byteLevel := pre[len(`"pre_tokenizer": `):]
	nest := func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	load := func(field, value string) error {
		dir := t.TempDir()
		p := filepath.Join(dir, "tokenizer.json")
		writeFile(t, p, []byte(strings.Replace(base, field, value, 1)))
		_, err := LoadHF(p)
		return err
	}
	seqPre := func(n int) string {
		return `"pre_tokenizer": ` + nest(`{"type": "Sequence", "pretokenizers": [`, byteLevel, `]}`, n)
	}
	seqNorm := func(n int) string {
		return `"normalizer": ` + nest(`{"type": "Sequence", "normalizers": [`, `{"type": "NFC"}`, `]}`, n)
	}
	if !strings.Contains(base, pre) || !strings.Contains(base, `"normalizer": null`) {
		t.Fatal("bosHF changed: no ByteLevel pre_tokenizer or null normalizer")
	}
	for _, c := range []struct {
		name, field, value, want string
	}{
		{"pre_tokenizer", pre, seqPre(3000), "Sequence pre-tokenizers nested more than 16 deep"},
		{"pre_tokenizer", pre, seqPre(17), "Sequence pre-tokenizers nested more than 16 deep"},
		{"normalizer", `"normalizer": null`, seqNorm(3000), "Sequence normalizers nested more than 16 deep"},
		{"normalizer", `"normalizer": null`, seqNorm(17), "Sequence normalizers nested more than 16 deep"},
	} {
		err := load(c.field, c.value)
		if msg := fmt.Sprint(err); !errors.Is(err, ErrUnsupported) || !strings.Contains(msg, c.want) || len(msg) >= 1<<10 {
			t.Errorf("%s in %d bytes: %.300s (%d bytes); want ErrUnsupported saying %q in under 1 KiB", c.name, len(c.value), msg, len(msg), c.want)
		}
	}
	if err := load(pre, seqPre(16)); err != nil {
		t.Errorf("pre_tokenizer 16 Sequences deep: %v", err)
	}
	if err := load(`"normalizer": null`, seqNorm(16)); err != nil {
		t.Errorf("normalizer 16 Sequences deep: %v", err)
	}
}
