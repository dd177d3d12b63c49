package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Hand-derived ids for the real Qwen3 and DeepSeek-V3 files. Vocabulary
// entries used (byte-level alphabet: 'Ċ' is "\n", 'ä' 0xE4, '¸' 0xB8, 'Ń'
// 0xAD): Qwen3 "user" 872, "Ċ" 198, "Hello" 9707, "1" 16, "2" 17, "3" 18,
// merges ("ä","¸") rank 3234 and ("ä¸","Ń") rank 15690 giving "ä¸Ń" 15946;
// DeepSeek-V3 "123" 6895, "4" 22, "hi" 6366. The same ids come out of
// transformers.js (@lenml/tokenizers 3.7.2), an implementation independent
// of this one.
func TestHFHandDerived(t *testing.T) {
	cases := []struct {
		tok, text string
		want      []int32
	}{
		// Added tokens (normalized=false) are cut out of the raw text; the
		// Split regex then isolates "user", "\n" and "Hello", each a single
		// vocabulary token.
		{"qwen3", "<|im_start|>user\nHello<|im_end|>", []int32{151644, 872, 198, 9707, 151645}},
		// Qwen's regex has \p{N} (one digit per piece).
		{"qwen3", "123", []int32{16, 17, 18}},
		// "中" = E4 B8 AD -> "ä" "¸" "Ń" -> "ä¸" -> "ä¸Ń".
		{"qwen3", "中", []int32{15946}},
		{"qwen3", "", []int32{}},
		// DeepSeek splits digits in runs of at most three (\p{N}{1,3}).
		{"deepseek_v3", "123", []int32{6895}},
		{"deepseek_v3", "1234", []int32{6895, 22}},
		// <｜User｜> and <｜Assistant｜> are normalized=true added tokens,
		// matched after the (empty) normalizer sequence ran.
		{"deepseek_v3", "<｜User｜>hi<｜Assistant｜>", []int32{128803, 6366, 128804}},
	}
	for _, c := range cases {
		tk := loadHFTest(t, c.tok)
		got, err := tk.Encode(c.text)
		if err != nil {
			t.Fatalf("%s Encode(%q): %v", c.tok, c.text, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s Encode(%q) = %v, want %v", c.tok, c.text, got, c.want)
		}
	}
	q := loadHFTest(t, "qwen3")
	// tokenizer_config.json: Qwen3 has no bos_token, eos_token <|im_end|>.
	if q.VocabSize() != 151669 || q.BOS() != -1 || q.EOS() != 151645 || q.Name() != "hf:tokenizer.json" {
		t.Errorf("qwen3 VocabSize %d BOS %d EOS %d Name %q, want 151669 -1 151645 hf:tokenizer.json", q.VocabSize(), q.BOS(), q.EOS(), q.Name())
	}
	d := loadHFTest(t, "deepseek_v3")
	if d.VocabSize() != 128815 || d.BOS() != 0 || d.EOS() != 1 {
		t.Errorf("deepseek_v3 VocabSize %d BOS %d EOS %d, want 128815 0 1", d.VocabSize(), d.BOS(), d.EOS())
	}
	// Decoding: a lone 0xE4 is an incomplete character; DecodePiece gives
	// the raw byte, Decode one U+FFFD.
	if got := q.DecodePiece(0, 160); got != "\xe4" {
		t.Errorf("DecodePiece(160) = %q, want raw byte 0xE4", got)
	}
	if got := q.Decode([]int32{160}); got != "\ufffd" {
		t.Errorf("Decode([160]) = %q, want U+FFFD", got)
	}
	if got := q.Decode([]int32{151644, 872, 198, 9707, 151645, 999999, -1}); got != "<|im_start|>user\nHello<|im_end|>" {
		t.Errorf("Decode = %q", got)
	}
	if !q.IsSpecial(151644) || q.IsSpecial(872) || q.IsSpecial(151667) {
		t.Errorf("IsSpecial: <|im_start|> special, 'user' and <think> not")
	}
	if _, err := q.Encode("a\xffb"); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("Encode(invalid UTF-8) err = %v, want ErrInvalidUTF8", err)
	}
}

// synthHF is a small byte-level BPE tokenizer.json whose results can be
// derived by hand from HF tokenizers' rules. Merge ranks: 0 b+c, 1 a+b,
// 2 Ġ+a, 3 a+bc. The pre-tokenizer splits on " " merged with the next
// piece, then maps bytes (' ' -> 'Ġ').
const synthHF = `{
  "added_tokens": [
    {"id": 100, "content": "<X>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
    {"id": 101, "content": "<Y>", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": false},
    {"id": 102, "content": "cat", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
    {"id": 103, "content": "<X>Z", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}
  ],
  "normalizer": NORMALIZER,
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": UNK, "fuse_unk": FUSE, "byte_fallback": true, "ignore_merges": IGNORE,
    "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "bc": 5, "abc": 6, "Ġa": 7, "t": 8, "x": 9, "y": 10, "ca": 11, "<unk>": 12, "<0x71>": 13},
    "merges": [["b", "c"], "a b", ["Ġ", "a"], ["a", "bc"]]},
  "decoder": DECODER
}`

// writeSynthHF writes synthHF with the caller's replacements (old, new
// pairs) applied first and the placeholders' defaults after, and returns
// the file's path.
func writeSynthHF(t *testing.T, repl ...string) string {
	t.Helper()
	text := synthHF
	if len(repl) > 0 {
		text = strings.NewReplacer(repl...).Replace(text)
	}
	text = strings.NewReplacer("NORMALIZER", "null", "UNK", "null", "FUSE", "false", "IGNORE", "false",
		"DECODER", `{"type": "ByteLevel"}`).Replace(text)
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHFSyntheticRules(t *testing.T) {
	tk, err := LoadHF(writeSynthHF(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		want []int32
	}{
		// Lowest rank first: b+c (0) before a+b (1), then a+bc (3) -> abc.
		// (Leftmost-first would give ab, c = [4 2].)
		{"abc", []int32{6}},
		// Equal ranks: leftmost first; both a+b merge.
		{"abab", []int32{4, 4}},
		// " ab c" -> " ab", " c" -> "Ġab": a+b (1) beats Ġ+a (2) -> [Ġ ab];
		// "Ġc" has no merge.
		{" ab c", []int32{3, 4, 3, 2}},
		// <X> has lstrip: it takes the space before it.
		{"x <X>y", []int32{9, 100, 10}},
		// <Y> has rstrip: it takes the spaces after it.
		{"<Y>  a", []int32{101, 0}},
		// "cat" is single_word: kept when standing alone...
		{"cat a", []int32{102, 7}},
		// ...and not inside a word: "bcat" is BPE'd (b+c -> bc, a, t).
		{"bcat", []int32{5, 0, 8}},
		// Leftmost-longest: "<X>Z" wins over "<X>".
		{"<X>Zb", []int32{103, 1}},
		// 'q' is not in the vocabulary but <0x71> is (byte_fallback);
		// 'z' has neither and there is no unk_token: HF drops it.
		{"qz", []int32{13}},
		// No ignore_merges: "ca" is in the vocabulary but has no merge.
		{"ca", []int32{2, 0}},
	}
	for _, c := range cases {
		got, err := tk.Encode(c.text)
		if err != nil {
			t.Fatalf("Encode(%q): %v", c.text, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if got := tk.Decode([]int32{4, 3, 2, 100, 7}); got != "ab c<X> a" {
		t.Errorf("Decode = %q, want %q", got, "ab c<X> a")
	}

	// unk_token without fusing: one <unk> per unknown character; with
	// fuse_unk, one for the run. A pending <unk> lands after byte-fallback
	// pieces that follow it (model.rs merge_word adds those without
	// flushing it). ignore_merges takes a word found whole in the vocab.
	variants := []struct {
		repl []string
		text string
		want []int32
	}{
		{[]string{"UNK", `"<unk>"`}, "zza", []int32{12, 12, 0}},
		{[]string{"UNK", `"<unk>"`, "FUSE", "true"}, "zza", []int32{12, 0}},
		{[]string{"UNK", `"<unk>"`}, "zq", []int32{13, 12}},
		{[]string{"IGNORE", "true"}, "ca", []int32{11}},
		{[]string{"NORMALIZER", `{"type": "NFKC"}`}, "ａｂ", []int32{4}},
	}
	for _, v := range variants {
		tk, err := LoadHF(writeSynthHF(t, v.repl...))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := tk.Encode(v.text); !slices.Equal(got, v.want) {
			t.Errorf("%v: Encode(%q) = %v, want %v", v.repl, v.text, got, v.want)
		}
	}
}

func TestLoadHFErrors(t *testing.T) {
	cases := []struct {
		repl []string
		want error
		msg  string
	}{
		{[]string{"NORMALIZER", `{"type": "Lowercase"}`}, ErrUnsupported, `normalizer type "Lowercase"`},
		{[]string{"DECODER", `{"type": "Metaspace"}`}, ErrUnsupported, `decoder type "Metaspace"`},
		{[]string{`{"String": " "}`, `{"Regex": "^a"}`}, ErrUnsupported, "uses ^ or $"},
		{[]string{`{"String": " "}`, `{"Regex": "(a"}`}, ErrUnsupported, "regex"},
		{[]string{`"a b"`, `"a q"`}, ErrFormat, "model.merges[1]"},
		{[]string{`"a b"`, `"a b c"`}, ErrFormat, "model.merges[1]"},
		{[]string{"UNK", `"<missing>"`}, ErrFormat, "unk_token"},
		{[]string{`"type": "BPE"`, `"type": "WordPiece"`}, ErrUnsupported, "WordPiece"},
		{[]string{`"decoder": DECODER`, `"decoder": DECODER,`}, ErrFormat, "invalid character"},
	}
	for _, c := range cases {
		p := writeSynthHF(t, c.repl...)
		_, err := LoadHF(p)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), p) {
			t.Errorf("%v: err = %v, want %v naming %s and %q", c.repl, err, c.want, p, c.msg)
		}
	}
	// A tokenizer_config.json naming a token the vocabulary lacks.
	p := writeSynthHF(t)
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), "tokenizer_config.json"), []byte(`{"bos_token": {"content": "<s>"}, "eos_token": "<X>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHF(p); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `bos_token "<s>"`) {
		t.Errorf("bad bos_token: err = %v", err)
	}
}

func TestLossyUTF8(t *testing.T) {
	// The example of Unicode 15.0 §3.9 "U+FFFD Substitution of Maximal
	// Subparts": <61 F1 80 80 E1 80 C2 62 80 63 80 BF 64> decodes to
	// a FFFD FFFD FFFD b FFFD c FFFD FFFD d.
	in := []byte{0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF, 0x64}
	if got, want := lossyUTF8(in), "a\ufffd\ufffd\ufffdb\ufffdc\ufffd\ufffdd"; got != want {
		t.Errorf("lossyUTF8 = %q, want %q", got, want)
	}
	// A surrogate (ED A0 80) is three maximal subparts (ED allows 80..9F).
	if got, want := lossyUTF8([]byte{0xED, 0xA0, 0x80}), "\ufffd\ufffd\ufffd"; got != want {
		t.Errorf("lossyUTF8(surrogate) = %q, want %q", got, want)
	}
	if got := lossyUTF8([]byte("héllo")); got != "héllo" {
		t.Errorf("valid input changed: %q", got)
	}
}

// TestHFEncodeMaxStopsBeforeMerging: EncodeMax refuses a pre-tokenized word
// that cannot fit before merging it, from a lower bound on its ids: no
// vocabulary token of the synthetic tokenizer is longer than 6 characters
// ("<0x71>", by hand), so "abc"×7 (21 characters) takes at least 4 ids; it
// encodes to 7 ids of "abc" (6). Before, the word was merged first (one
// word of 16 MB of "a" took 11 s with Qwen3's tokenizer) and then counted;
// the merge cache shows whether it was merged.
func TestHFEncodeMaxStopsBeforeMerging(t *testing.T) {
	tk, err := LoadHF(writeSynthHF(t))
	if err != nil {
		t.Fatal(err)
	}
	word := strings.Repeat("abc", 7)
	if tk.model.maxRunes != 6 || tk.model.minTokens(word) != 4 {
		t.Fatalf("maxRunes %d, minTokens %d; want 6 and 4", tk.model.maxRunes, tk.model.minTokens(word))
	}
	if ids, err := tk.EncodeMax(word, 3); ids != nil || !errors.Is(err, ErrTooManyTokens) {
		t.Fatalf("max 3: %v, %v; want ErrTooManyTokens", ids, err)
	}
	if _, merged := tk.model.cache.get(word); merged {
		t.Errorf("the word was merged although it cannot fit in 3 ids")
	}
	if ids, err := tk.EncodeMax(word, 7); err != nil || !slices.Equal(ids, []int32{6, 6, 6, 6, 6, 6, 6}) {
		t.Errorf("max 7: %v, %v; want 7 × 6", ids, err)
	}
}
