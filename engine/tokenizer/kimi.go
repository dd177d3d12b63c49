package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"hsdb/engine/jsonerr"
	"hsdb/engine/regfile"
	"io/fs"
	"path/filepath"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Kimi's special-token layout, from moonshotai Kimi-K2's
// tokenization_kimi.py (TikTokenTokenizer): the num_reserved_special_tokens
// (256) ids right after the ranks are special tokens; id i is named by
// tokenizer_config.json's added_tokens_decoder[i].content, else
// "<|reserved_token_i|>"; bos_token and eos_token (default "[BOS]" and
// "[EOS]") are looked up among them. Kimi-K2 has 163584 ranks, so its
// specials are ids 163584..163839 ([BOS] 163584, [EOS] 163585) and the
// vocabulary is 163840, config.json's vocab_size. (Some later Kimi models'
// copies of the file reserve 256+2 ids; hsdb follows Kimi-K2/K2.5's.)
const (
	KimiReservedSpecials = 256
	kimiDefaultBOS       = "[BOS]"
	kimiDefaultEOS       = "[EOS]"
	kimiTokenizerClass   = "TikTokenTokenizer"
)

// Kimi's TikTokenTokenizer.encode cuts text before tiktoken sees it: into
// chunks of 400,000 characters (TIKTOKEN_MAX_ENCODE_CHARS), then each chunk
// where a run of whitespace or of non-whitespace characters (Python
// str.isspace) grows past 25,000 characters (MAX_NO_WHITESPACES_CHARS,
// _split_whitespaces_or_nonwhitespaces); every piece is encoded on its own.
// Characters are Unicode code points, as Python's str counts them.
const (
	kimiMaxChunkChars = 400_000
	kimiMaxRunChars   = 25_000
)

// LoadKimi reads a Kimi-K2 / Kimi-K2.5 tokenizer: path is its
// tiktoken.model (ranks, see ParseTiktokenRanks), split with PatternKimi,
// with the special tokens of Kimi's layout (see KimiReservedSpecials) named
// by the tokenizer_config.json in the same directory, or, without that
// file or its added_tokens_decoder, Kimi's released defaults: [BOS] and
// [EOS] at the first two special ids, the rest "<|reserved_token_i|>" (the
// chat tokens <|im_end|>, ... then have their reserved names). Encode
// follows Kimi's TikTokenTokenizer.encode with its defaults (special tokens
// in the text are encoded as such; text cut as kimiChunks describes).
//
// Errors name the file: the rank file's (ParseTiktokenRanks) and, in
// tokenizer_config.json, bad JSON, an added_tokens_decoder id that is not
// an integer or lies outside the special ids, two specials with the same
// text, a bos_token or eos_token that is not a special token (ErrFormat),
// or a tokenizer_class other than TikTokenTokenizer (ErrUnsupported).
func LoadKimi(path string) (*Tiktoken, error) {
	data, err := readRankFile(path)
	if err != nil {
		return nil, fmt.Errorf("kimi tokenizer: %w", err)
	}
	ranks, tokens, err := ParseTiktokenRanks(data)
	if err != nil {
		return nil, fmt.Errorf("kimi tokenizer %s: %w", path, err)
	}
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	cfg, err := regfile.ReadFile(cfgPath, MaxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cfg = nil
	case err != nil:
		return nil, fmt.Errorf("kimi tokenizer: %w", err)
	}
	specials, bos, eos, err := kimiSpecials(len(ranks), cfg)
	if err != nil {
		return nil, fmt.Errorf("kimi tokenizer %s: %w", cfgPath, err)
	}
	t, err := newTiktoken(filepath.Base(path), ranks, tokens, splitKimi, specials, specials[bos], specials[eos])
	if err != nil {
		return nil, fmt.Errorf("kimi tokenizer %s: %w", path, err)
	}
	t.kimiChunks = true
	return t, nil
}

// kimiSpecials returns Kimi's special tokens for a rank file of n ranks
// and the texts of BOS and EOS, from tokenizer_config.json's contents (nil
// for the released defaults).
func kimiSpecials(n int, cfgData []byte) (map[string]int32, string, string, error) {
	names := map[int]string{n: kimiDefaultBOS, n + 1: kimiDefaultEOS}
	bos, eos := kimiDefaultBOS, kimiDefaultEOS
	if cfgData != nil {
		var cfg struct {
			AddedTokensDecoder map[string]struct {
				Content string `json:"content"`
			} `json:"added_tokens_decoder"`
			BOS            json.RawMessage `json:"bos_token"`
			EOS            json.RawMessage `json:"eos_token"`
			TokenizerClass string          `json:"tokenizer_class"`
		}
		if err := jsonerr.CheckSurrogates(cfgData); err != nil { // encoding/json would decode it to U+FFFD
			return nil, "", "", fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if err := json.Unmarshal(cfgData, &cfg); err != nil {
			return nil, "", "", fmt.Errorf("%w: %v", ErrFormat, jsonerr.Explain(err))
		}
		if cfg.TokenizerClass != "" && cfg.TokenizerClass != kimiTokenizerClass {
			return nil, "", "", fmt.Errorf("%w: tokenizer_class %s: a tiktoken.model directory is read as Kimi's %s only", ErrUnsupported, quoteClip(cfg.TokenizerClass), kimiTokenizerClass)
		}
		if cfg.AddedTokensDecoder != nil {
			names = map[int]string{}
		}
		keyOf := map[int]string{}
		for key, tok := range cfg.AddedTokensDecoder {
			id, err := strconv.Atoi(key)
			if err != nil {
				return nil, "", "", fmt.Errorf("%w: added_tokens_decoder key %s is not an integer id", ErrFormat, quoteClip(key))
			}
			if prev, dup := keyOf[id]; dup {
				// "163584" and "0163584" (or "+163584"): which text the id
				// gets would follow Go's map order, differing run to run.
				a, b := min(prev, key), max(prev, key)
				return nil, "", "", fmt.Errorf("%w: added_tokens_decoder keys %s and %s are both id %d", ErrFormat, quoteClip(a), quoteClip(b), id)
			}
			keyOf[id] = key
			if id < n || id >= n+KimiReservedSpecials {
				return nil, "", "", fmt.Errorf("%w: added_tokens_decoder[%s] %s: Kimi's special tokens have ids %d..%d (after the %d ranks)", ErrFormat, quoteClip(key), quoteClip(tok.Content), n, n+KimiReservedSpecials-1, n)
			}
			if tok.Content == "" {
				return nil, "", "", fmt.Errorf("%w: added_tokens_decoder[%s] has no content", ErrFormat, quoteClip(key))
			}
			names[id] = tok.Content
		}
		var err error
		if bos, err = configToken(cfg.BOS, "bos_token", bos); err != nil {
			return nil, "", "", err
		}
		if eos, err = configToken(cfg.EOS, "eos_token", eos); err != nil {
			return nil, "", "", err
		}
	}
	specials := make(map[string]int32, KimiReservedSpecials)
	for id := n; id < n+KimiReservedSpecials; id++ {
		s, ok := names[id]
		if !ok {
			s = "<|reserved_token_" + strconv.Itoa(id) + "|>"
		}
		if prev, dup := specials[s]; dup {
			return nil, "", "", fmt.Errorf("%w: special tokens %d and %d are both %s", ErrFormat, prev, id, quoteClip(s))
		}
		specials[s] = int32(id)
	}
	for _, f := range []struct{ key, s string }{{"bos_token", bos}, {"eos_token", eos}} {
		if _, ok := specials[f.s]; !ok {
			return nil, "", "", fmt.Errorf("%w: %s %s is not one of the special tokens (ids %d..%d)", ErrFormat, f.key, quoteClip(f.s), n, n+KimiReservedSpecials-1)
		}
	}
	return specials, bos, eos, nil
}

// configToken reads a tokenizer_config.json token field: a string or an
// AddedToken object ({"content": ...}); absent or null keeps def.
func configToken(raw json.RawMessage, key, def string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("%w: %s: want a string or an AddedToken object, got %s", ErrFormat, key, briefJSON(raw))
	}
	return obj.Content, nil
}

// kimiChunks yields text's 400,000-character chunks in order, in one pass
// over the text (counting the rest of the text's characters at every chunk
// made 200 MB take 20 s). Kimi's TikTokenTokenizer.encode cuts a text so
// before calling tiktoken, then each chunk wherever a run of whitespace or
// of non-whitespace characters exceeds 25,000 (appendRunPieces: the run's
// first 25,000 characters end one piece, the next starts the following).
func kimiChunks(text string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for len(text) > 0 {
			end, n := len(text), 0
			for i := range text {
				if n == kimiMaxChunkChars {
					end = i
					break
				}
				n++
			}
			if !yield(text[:end]) {
				return
			}
			text = text[end:]
		}
	}
}

// appendRunPieces is Kimi's _split_whitespaces_or_nonwhitespaces(s,
// 25000), appending the pieces of the non-empty s to out.
func appendRunPieces(out []string, s string) []string {
	r0, _ := utf8.DecodeRuneInString(s)
	inSpace, runLen, start := pyIsSpace(r0), 0, 0
	for i, r := range s {
		sp := pyIsSpace(r)
		if sp != inSpace {
			inSpace, runLen = sp, 1
			continue
		}
		runLen++
		if runLen > kimiMaxRunChars {
			out = append(out, s[start:i])
			start, runLen = i, 1
		}
	}
	return append(out, s[start:])
}

// pyIsSpace is Python's str.isspace for one character: the White_Space
// property plus U+001C..U+001F (bidirectional class B or S).
func pyIsSpace(r rune) bool {
	return (r >= 0x1C && r <= 0x1F) || unicode.Is(unicode.White_Space, r)
}

// briefJSON is a JSON value for an error message: its text when short,
// else its JSON type and size (a value may be as large as the file).
func briefJSON(raw json.RawMessage) string {
	if len(raw) <= 40 {
		return string(raw)
	}
	return fmt.Sprintf("a JSON %s of %d bytes", jsonerr.Kind(raw), len(raw))
}
