package tokenizer

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// byteRanks returns a rank file whose ranks 0..255 are the single bytes
// 0x00..0xFF, followed by extra lines.
func byteRanks(extra ...string) string {
	var sb strings.Builder
	for b := 0; b < 256; b++ {
		fmt.Fprintf(&sb, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	for _, l := range extra {
		sb.WriteString(l + "\n")
	}
	return sb.String()
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// kimiDir writes tiktoken.model (and tokenizer_config.json unless cfg is
// "") into a new directory and returns the rank file's path.
func kimiDir(t *testing.T, ranks, cfg string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tiktoken.model")
	if err := os.WriteFile(path, []byte(ranks), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg != "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestTiktokenBadRankFile: every malformed rank file gives one ErrFormat
// error naming the file and the line (or the missing rank or byte).
func TestTiktokenBadRankFile(t *testing.T) {
	lines := strings.Repeat("\n", maxRanks+1)
	missingA := strings.Replace(byteRanks(), b64("A")+" 65\n", b64("AB")+" 65\n", 1)
	for _, c := range []struct{ name, file, want string }{
		{"malformed line", byteRanks(b64("ab") + " 256 extra"), "line 257: "},
		{"one field", byteRanks(b64("ab")), `line 257: "YWI=": want "<base64 token> <rank>"`},
		{"bad base64", byteRanks("Y!I= 256"), `line 257: token "Y!I=" is not base64`},
		{"base64 without padding", byteRanks("YWI 256"), `line 257: token "YWI" is not base64`},
		{"rank not a number", byteRanks(b64("ab") + " 2x6"), `line 257: rank "2x6" is not a non-negative 32-bit integer`},
		{"negative rank", byteRanks(b64("ab") + " -1"), `line 257: rank "-1"`},
		{"rank beyond the lines", byteRanks(b64("ab") + " 999"), "line 257: rank 999, but the file has 258 lines"},
		{"duplicate rank", byteRanks(b64("ab")+" 256", b64("cd")+" 256"), "line 258: rank 256 is also the rank of line 257"},
		{"duplicate token", byteRanks(b64("ab")+" 256", b64("ab")+" 257"), `line 258: token "ab" already has rank 256 (line 257)`},
		{"rank gap", byteRanks(b64("ab")+" 256", b64("cd")+" 258", b64("ef")+" 259"), "rank 257 is missing: 259 ranks must be 0..258 without gaps, but line 259 has rank 259"},
		{"empty file", "", "no ranks (an empty file)"},
		{"only empty lines", "\n\r\n\n", "no ranks"},
		{"a byte without a token", missingA, "no token for the byte 0x41"},
		{"too many lines", lines, fmt.Sprintf("%d lines, more than the %d ranks", maxRanks+2, maxRanks)},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := kimiDir(t, c.file, "")
			tk, err := LoadKimi(path)
			if tk != nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an ErrFormat naming %s and %q", err, path, c.want)
			}
		})
	}
	t.Run("huge file", func(t *testing.T) {
		path := kimiDir(t, "", "")
		// A sparse file: refused by its size before anything is read.
		if err := os.Truncate(path, maxRankFileBytes+1); err != nil {
			t.Fatal(err)
		}
		tk, err := LoadKimi(path)
		if tk != nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "more than the 64 MiB") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tiktoken.model")
		if _, err := LoadKimi(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestKimiSpecialLayout: Kimi's 256 special ids follow the ranks; names
// come from added_tokens_decoder, else <|reserved_token_i|>; without
// tokenizer_config.json [BOS] and [EOS] come first (tokenization_kimi.py).
func TestKimiSpecialLayout(t *testing.T) {
	ranks := byteRanks(b64("ab") + " 256")
	const n = 257
	t.Run("defaults", func(t *testing.T) {
		tk, err := LoadKimi(kimiDir(t, ranks, ""))
		if err != nil {
			t.Fatal(err)
		}
		if tk.VocabSize() != n+256 || tk.BOS() != n || tk.EOS() != n+1 {
			t.Fatalf("vocab %d BOS %d EOS %d, want %d %d %d", tk.VocabSize(), tk.BOS(), tk.EOS(), n+256, n, n+1)
		}
		for id, s := range map[int32]string{n: "[BOS]", n + 1: "[EOS]", n + 2: "<|reserved_token_259|>", n + 255: "<|reserved_token_512|>"} {
			if got, ok := tk.SpecialID(s); !ok || got != id || !tk.IsSpecial(id) || tk.DecodePiece(0, id) != s {
				t.Errorf("%q: id %d %v (special %v, piece %q), want %d", s, got, ok, tk.IsSpecial(id), tk.DecodePiece(0, id), id)
			}
		}
		if tk.IsSpecial(256) || tk.IsSpecial(n+256) {
			t.Error("rank 256 or the id past the specials is special")
		}
		// Specials in text are single ids; "ab" is rank 256; 'x' is byte 0x78.
		ids, err := tk.Encode("[BOS]ab<|reserved_token_300|>x[EOS]")
		want := []int32{n, 256, 300, 'x', n + 1}
		if err != nil || !slices.Equal(ids, want) {
			t.Fatalf("Encode = %v %v, want %v", ids, err, want)
		}
		if d := tk.Decode(append(ids, 9999, -1)); d != "[BOS]ab<|reserved_token_300|>x[EOS]" {
			t.Fatalf("Decode = %q", d)
		}
		if _, err := tk.Encode("bad \xff utf-8"); !errors.Is(err, ErrInvalidUTF8) {
			t.Fatalf("invalid UTF-8: %v", err)
		}
	})
	t.Run("tokenizer_config.json", func(t *testing.T) {
		cfg := `{"added_tokens_decoder": {"257": {"content": "[BOS]"}, "258": {"content": "[EOS]"}, "259": {"content": "<|im_end|>"}, "512": {"content": "[PAD]"}},
			"bos_token": {"content": "[BOS]", "special": true}, "eos_token": "<|im_end|>", "tokenizer_class": "TikTokenTokenizer"}`
		tk, err := LoadKimi(kimiDir(t, ranks, cfg))
		if err != nil {
			t.Fatal(err)
		}
		if tk.BOS() != n || tk.EOS() != n+2 {
			t.Fatalf("BOS %d EOS %d, want %d %d", tk.BOS(), tk.EOS(), n, n+2)
		}
		if id, _ := tk.SpecialID("[PAD]"); id != 512 {
			t.Fatalf("[PAD] %d", id)
		}
		if id, _ := tk.SpecialID("<|reserved_token_260|>"); id != 260 {
			t.Fatalf("reserved 260 -> %d", id)
		}
	})
	for _, c := range []struct{ name, cfg, want string }{
		{"bad json", `{"added_tokens_decoder": [`, "unexpected end of JSON"},
		{"id below the specials", `{"added_tokens_decoder": {"42": {"content": "x"}}}`, `added_tokens_decoder["42"] "x": Kimi's special tokens have ids 257..512`},
		{"id above the specials", `{"added_tokens_decoder": {"513": {"content": "x"}}}`, `added_tokens_decoder["513"]`},
		{"id not a number", `{"added_tokens_decoder": {"abc": {"content": "x"}}}`, `key "abc" is not an integer`},
		{"no content", `{"added_tokens_decoder": {"300": {}}}`, `added_tokens_decoder["300"] has no content`},
		{"duplicate text", `{"added_tokens_decoder": {"257": {"content": "[BOS]"}, "258": {"content": "[EOS]"}, "300": {"content": "[EOS]"}}}`, `special tokens 258 and 300 are both "[EOS]"`},
		{"bos not special", `{"added_tokens_decoder": {"257": {"content": "[BOS]"}, "258": {"content": "[EOS]"}}, "bos_token": "<s>"}`, `bos_token "<s>" is not one of the special tokens (ids 257..512)`},
		{"eos missing from the table", `{"added_tokens_decoder": {"257": {"content": "[BOS]"}}}`, `eos_token "[EOS]" is not one of the special tokens`},
		{"bos of a bad type", `{"bos_token": 5}`, "bos_token: want a string or an AddedToken object, got 5"},
		{"another tokenizer class", `{"tokenizer_class": "LlamaTokenizer"}`, `tokenizer_class "LlamaTokenizer"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := kimiDir(t, ranks, c.cfg)
			cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
			tk, err := LoadKimi(path)
			if tk != nil || err == nil || !strings.Contains(err.Error(), cfgPath) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error naming %s and %q", err, cfgPath, c.want)
			}
			wantKind := ErrFormat
			if strings.Contains(c.name, "class") {
				wantKind = ErrUnsupported
			}
			if !errors.Is(err, wantKind) {
				t.Fatalf("%v does not wrap %v", err, wantKind)
			}
		})
	}
}

// TestNewTiktokenErrors: an unknown split pattern and special ids that
// collide with ranks or with each other are refused.
func TestNewTiktokenErrors(t *testing.T) {
	ranks := []byte(byteRanks())
	for _, c := range []struct {
		name     string
		pattern  string
		specials map[string]int32
		want     error
		msg      string
	}{
		{"unknown pattern", `\w+|\s+`, nil, ErrUnsupported, `split pattern "\\w+|\\s+"`},
		{"special on a rank", PatternCL100K, map[string]int32{"<x>": 65}, ErrFormat, `special token "<x>" has id 65, which is the rank of "A"`},
		{"shared special id", PatternCL100K, map[string]int32{"<x>": 300, "<y>": 300}, ErrFormat, "share id 300"},
		{"empty special", PatternCL100K, map[string]int32{"": 300}, ErrFormat, `special token "" with id 300`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTiktoken("r.tiktoken", ranks, c.pattern, c.specials, -1, -1)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "r.tiktoken") {
				t.Fatalf("got %v, want %v with %q", err, c.want, c.msg)
			}
		})
	}
	if _, err := NewTiktoken("r.tiktoken", ranks, PatternCL100K, nil, 256, -1); !errors.Is(err, ErrFormat) {
		t.Fatalf("BOS past the vocabulary: %v", err)
	}
}

// kimiPieces cuts text as Kimi's TikTokenTokenizer.encode does before
// calling tiktoken: 400,000-character chunks, each cut further wherever a
// run of whitespace or of non-whitespace characters exceeds 25,000 (the
// run's first 25,000 characters end one piece, the next starts the
// following). Empty text gives no pieces. EncodeMax cuts them as it
// goes (kimiChunks, appendRunPieces); this collects them for the test.
func kimiPieces(text string) []string {
	var out []string
	for chunk := range kimiChunks(text) {
		out = appendRunPieces(out, chunk)
	}
	return out
}

// TestKimiPieces: the cuts of Kimi's TikTokenTokenizer.encode, derived by
// hand from tokenization_kimi.py: a run of more than 25,000 space or
// non-space characters (Python's str.isspace, which counts U+001C..U+001F)
// is cut after 25,000; text is cut every 400,000 characters.
func TestKimiPieces(t *testing.T) {
	r := strings.Repeat
	for _, c := range []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"short", "hello world", []string{"hello world"}},
		{"25000 exactly", r("a", 25000), []string{r("a", 25000)}},
		{"25001", r("a", 25001), []string{r("a", 25000), "a"}},
		{"counted in characters", r("中", 25001), []string{r("中", 25000), "中"}},
		{"spaces before a long word", "  " + r("b", 50001), []string{"  " + r("b", 25000), r("b", 25000), "b"}},
		{"python spaces", r("\x1c", 25001) + "x", []string{r("\x1c", 25000), "\x1cx"}},
		{"400000 chunk", r("ab ", 133334), []string{r("ab ", 133333) + "a", "b "}},
	} {
		got := kimiPieces(c.text)
		if len(got) != len(c.want) {
			t.Errorf("%s: %d pieces, want %d", c.name, len(got), len(c.want))
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: piece %d has %d bytes, want %d", c.name, i, len(got[i]), len(c.want[i]))
			}
		}
	}
}

// TestTiktokenSplitHand: pieces of the four patterns on cases derived by
// hand from the regexes (leftmost-first alternation, greedy backtracking),
// the places where they differ.
func TestTiktokenSplitHand(t *testing.T) {
	for _, c := range []struct {
		kind splitKind
		text string
		want []string
	}{
		// \s++$ (cl100k) keeps a trailing run whole; \s*[\r\n]+ first
		// (Llama 3, o200k, Kimi) ends a piece at its last newline.
		{splitCL100K, "a\n  ", []string{"a", "\n  "}},
		{splitLlama3, "a\n  ", []string{"a", "\n", "  "}},
		{splitO200K, "a\n  ", []string{"a", "\n", "  "}},
		// \s+(?!\S) leaves the last space to the word.
		{splitCL100K, "a   b", []string{"a", "  ", " b"}},
		// o200k's [\r\n/]* after punctuation; Kimi's [\r\n]*.
		{splitO200K, ">\n//x", []string{">\n//", "x"}},
		{splitKimi, ">\n//x", []string{">\n", "//", "x"}},
		// Kimi: Han runs first, CJK punctuation is not Han and is taken as
		// the optional prefix of the following word.
		{splitKimi, "中文，English句子", []string{"中文", "，English", "句子"}},
		{splitO200K, "中文，English句子", []string{"中文", "，English句子"}},
		// Case-split words and contractions, (?i) folding ſ to s.
		{splitO200K, "XMLHttpRequest", []string{"XMLHttp", "Request"}},
		{splitO200K, "DON'T don'ſ", []string{"DON'T", " don'ſ"}},
		{splitCL100K, "don'ſ", []string{"don", "'ſ"}},
		// Digits in threes.
		{splitCL100K, "1234567", []string{"123", "456", "7"}},
	} {
		var rt runeText
		var got []string
		for _, sp := range (tiktokenSplitter{c.kind}).split(&rt, c.text, nil) {
			got = append(got, c.text[sp[0]:sp[1]])
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("kind %d %q: %q, want %q", c.kind, c.text, got, c.want)
		}
	}
}

// TestTiktokenEncodeMax: EncodeMax gives Encode's ids while they number
// at most max and an ErrTooManyTokens error naming the bound and the
// text's size once they pass it, with Kimi's chunking too; EncodeAtMost
// uses it. By hand: with only the 256 single-byte ranks and "ab" (rank
// 256), "abab c" splits into "abab", " c" and merges to [256, 256, 32, 99].
func TestTiktokenEncodeMax(t *testing.T) {
	tk, err := NewTiktoken("bytes", []byte(byteRanks(b64("ab")+" 256")), PatternCL100K, nil, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{256, 256, 32, 99}
	for _, kimi := range []bool{false, true} {
		tk.kimiChunks = kimi
		for _, max := range []int{-1, 4, 100} {
			if ids, err := EncodeAtMost(tk, "abab c", max); err != nil || !slices.Equal(ids, want) {
				t.Errorf("kimi %v, max %d: %v, %v; want %v", kimi, max, ids, err, want)
			}
		}
		ids, err := EncodeAtMost(tk, "abab c", 3)
		if ids != nil || !errors.Is(err, ErrTooManyTokens) || !strings.Contains(err.Error(), "tiktoken:bytes: too many tokens: more than 3 in a text of 6 bytes") {
			t.Errorf("kimi %v, max 3: %v, %v; want ErrTooManyTokens naming 3 and 6 bytes", kimi, ids, err)
		}
		// A piece that cannot fit is refused before it is merged: no rank
		// is longer than 2 bytes ("ab"), so "abababab" (one piece) takes
		// at least 4 ids; the merge cache shows whether it was merged.
		tk.cache = hfCache{}
		if _, err := tk.EncodeMax("abababab", 3); !errors.Is(err, ErrTooManyTokens) {
			t.Errorf("kimi %v: abababab under max 3: %v", kimi, err)
		}
		if _, merged := tk.cache.get("abababab"); merged {
			t.Errorf("kimi %v: abababab was merged although it cannot fit in 3 ids", kimi)
		}
		if ids, err := tk.EncodeMax("abababab", 4); err != nil || !slices.Equal(ids, []int32{256, 256, 256, 256}) {
			t.Errorf("kimi %v: abababab under max 4: %v, %v", kimi, ids, err)
		}
		// 3 MB of spaces: more than 10 ids before the end (Kimi's chunking:
		// within the first 25,000-character piece).
		text := strings.Repeat(" ", 3<<20)
		if _, err := tk.EncodeMax(text, 10); !errors.Is(err, ErrTooManyTokens) {
			t.Errorf("kimi %v: 3 MB of spaces under max 10: %v", kimi, err)
		}
	}
}
