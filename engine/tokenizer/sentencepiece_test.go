package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// spCanonical rewrites s the way SentencePiece's normalizer treats spaces
// in tok512.model (identity rule, remove_extra_whitespaces on): leading
// spaces go and runs of spaces collapse to one (U+0020 only), a literal "▁"
// then stands for a space (SentencePiece cannot tell them apart once spaces
// are escaped), and trailing spaces (either kind) go. llama2.c's run.c does
// none of this, so run.c's ids for spCanonical(s) must equal
// SentencePiece's ids for s.
func spCanonical(s string) string {
	var sb strings.Builder
	prevSpace := true
	for _, r := range s {
		if r == ' ' && prevSpace {
			continue
		}
		prevSpace = r == ' '
		sb.WriteRune(r)
	}
	return strings.TrimRight(strings.ReplaceAll(sb.String(), "▁", " "), " ")
}

// TestSentencePieceMatchesLlama2C checks, over testdata/strings.txt, that
// go-sentencepiece (plus this package's normalizer) and the llama2.c
// tokenizer agree on stories260K's vocabulary (tok512.model and tok512.bin
// hold the same 512 pieces and scores): exactly for strings SentencePiece
// leaves unchanged, and after spCanonical otherwise. The strings where they
// legitimately differ are the ones with leading, trailing or repeated
// spaces or a literal U+2581; SentencePiece proper (spm 0.1.97 locally,
// and testdata/tok512.expected.json) agrees with the SentencePiece type.
func TestSentencePieceMatchesLlama2C(t *testing.T) {
	sp, l2 := loadSentencePieceTest(t), loadLlama2CTest(t)
	differ := 0
	for _, s := range testStrings(t) {
		got, _ := sp.Encode(s)
		exact, _ := l2.Encode(s)
		canon, _ := l2.Encode(spCanonical(s))
		if !slices.Equal(got, canon) {
			t.Errorf("%q: sentencepiece %v, llama2.c of %q %v", s, got, spCanonical(s), canon)
		}
		if !slices.Equal(got, exact) {
			differ++
			if spCanonical(s) == s {
				t.Errorf("%q has no extra spaces, yet sentencepiece %v != llama2.c %v", s, got, exact)
			}
		}
	}
	if differ == 0 {
		t.Errorf("no string differs: the whitespace cases of strings.txt did not exercise the normalizer")
	}
	t.Logf("%d strings differ, all through SentencePiece's whitespace normalization", differ)
}

func TestSentencePieceHandDerived(t *testing.T) {
	sp := loadSentencePieceTest(t)
	if sp.VocabSize() != 512 || sp.BOS() != 1 || sp.EOS() != 2 || sp.Name() != "sentencepiece:tok512.model" {
		t.Fatalf("VocabSize %d BOS %d EOS %d Name %q", sp.VocabSize(), sp.BOS(), sp.EOS(), sp.Name())
	}
	enc := []struct {
		text string
		want []int32
	}{
		// Same merges as llama2.c (see TestLlama2CEncodeHandDerived).
		{"Once upon a time", []int32{403, 407, 261, 378}},
		// Extra spaces removed first: "  hello  world  " -> "▁hello▁world",
		// which merges like "hello world": [281 " he", 306 "ll", 414 "o",
		// 263 " w", 304 "or", 341 "ld"].
		{"  hello  world  ", []int32{281, 306, 414, 263, 304, 341}},
		// Only spaces: nothing is left, no dummy prefix.
		{"   ", []int32{}},
		// A malformed byte becomes U+FFFD (EF BF BD), not a piece, so its
		// bytes fall back: 0xEF+3=242, 0xBF+3=194, 0xBD+3=192.
		{"\xff", []int32{410, 242, 194, 192}},
		// Tabs and newlines are not spaces for SentencePiece: "▁a" 261,
		// <0x0A> 13, <0x09> 12, "b" 430.
		{"a\n\tb", []int32{261, 13, 12, 430}},
	}
	for _, c := range enc {
		got, _ := sp.Encode(c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	dec := []struct {
		ids  []int32
		want string
	}{
		// Leading "▁" dropped while nothing has been output (checked
		// against sentencepiece 0.1.97's decode).
		{[]int32{410, 410, 403}, "Once"},
		{[]int32{1, 2, 403, 407}, "Once upon"},
		{[]int32{13, 403}, "\n Once"},
		// <unk> prints trainer_spec.unk_surface, which tok512 stores with
		// literal backslashes (llama2.c passed a raw string to the trainer).
		{[]int32{403, 0}, `Once \342\201\207 `},
		// Two bytes of a three-byte character: one U+FFFD per byte.
		{[]int32{231, 187}, "\ufffd\ufffd"},
		{[]int32{231, 187, 176}, "中"},
	}
	for _, d := range dec {
		if got := sp.Decode(d.ids); got != d.want {
			t.Errorf("Decode(%v) = %q, want %q", d.ids, got, d.want)
		}
	}
	if got := sp.DecodePiece(1, 403); got != "Once" {
		t.Errorf("DecodePiece(BOS, 403) = %q, want %q", got, "Once")
	}
	if got := sp.DecodePiece(403, 231); got != "\xe4" {
		t.Errorf("DecodePiece(403, 231) = %q, want the raw byte 0xE4", got)
	}
}

// writeModelVariant writes tok512.model with extra serialized fields
// appended (protobuf merges them into the message) and returns its path.
func writeModelVariant(t *testing.T, extra []byte) string {
	t.Helper()
	data, err := os.ReadFile("testdata/tok512.model")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "variant.model")
	if err := os.WriteFile(p, append(data, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// specField serializes ModelProto field outer holding one varint or bytes
// field inner.
func specField(outer, inner protowire.Number, v uint64, b []byte) []byte {
	var in []byte
	if b != nil {
		in = protowire.AppendTag(in, inner, protowire.BytesType)
		in = protowire.AppendBytes(in, b)
	} else {
		in = protowire.AppendTag(in, inner, protowire.VarintType)
		in = protowire.AppendVarint(in, v)
	}
	out := protowire.AppendTag(nil, outer, protowire.BytesType)
	return protowire.AppendBytes(out, in)
}

func TestLoadSentencePieceErrors(t *testing.T) {
	cases := []struct {
		name  string
		extra []byte
		want  error
		msg   string
	}{
		{"unigram", specField(2, 3, 1, nil), ErrUnsupported, "model_type 1"},
		{"charsmap", specField(3, 2, 0, []byte{1, 2, 3, 4, 5}), ErrUnsupported, "precompiled_charsmap"},
		{"suffix", specField(2, 24, 1, nil), ErrUnsupported, "treat_whitespace_as_suffix"},
		{"no escape", specField(3, 5, 0, nil), ErrUnsupported, "escape_whitespaces"},
		{"bos out of range", specField(2, 41, 600, nil), ErrFormat, "bos_id 600"},
		{"truncated", []byte{0x0a, 0x20, 0x01}, ErrFormat, "field 1"},
	}
	for _, c := range cases {
		p := writeModelVariant(t, c.extra)
		_, err := LoadSentencePiece(p)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err = %v, want %v naming %s and %q", c.name, err, c.want, p, c.msg)
		}
	}
	// Settings this type applies itself load fine and change the ids:
	// without add_dummy_prefix, "Once" has no leading "▁" and cannot become
	// " Once" (403): O 441, "n" 416, "ce" 331.
	p := writeModelVariant(t, specField(3, 3, 0, nil))
	sp, err := LoadSentencePiece(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sp.Encode("Once"); !slices.Equal(got, []int32{441, 416, 331}) {
		t.Errorf("add_dummy_prefix=false: Encode(Once) = %v, want [441 416 331]", got)
	}
}
