package tokenizer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hsdb/engine/regfile"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tiktoken is a byte-pair tokenizer in OpenAI tiktoken's format: a rank
// file (`tiktoken.model`, cl100k_base.tiktoken) gives every token's bytes
// and its rank, which is also its id; a split pattern cuts text into
// pieces; each piece is one token when its bytes are a token, else its
// bytes are merged pairwise, the adjacent pair whose concatenation has the
// lowest rank first, leftmost on ties (tiktoken src/lib.rs
// byte_pair_encode and _byte_pair_merge). Special tokens found in the text
// are encoded as their ids, never split: tiktoken's
// encode(text, allowed_special="all"), the policy of Kimi's
// TikTokenTokenizer.encode (allow_special_tokens=True, its default) and of
// hsdb's `input text`. Where one special token's text is a prefix of
// another's at the same place, the longest wins (tiktoken's alternation
// follows a hash map's order there; Kimi's and OpenAI's specials have no
// such pairs).
//
// LoadKimi builds one from a Kimi-K2 / Kimi-K2.5 model directory;
// NewTiktoken from a rank file, one of the known patterns and a table of
// special tokens.
type Tiktoken struct {
	name     string
	split    tiktokenSplitter
	ranks    map[string]int32 // token bytes -> rank (= id)
	tokens   []string         // [VocabSize] bytes of each id; "" for holes
	isToken  []bool           // [VocabSize] whether the id exists
	special  *addedMatcher    // special tokens, leftmost-longest in text
	specials map[string]int32
	bos, eos int32
	// kimiChunks makes Encode cut text as Kimi's TikTokenTokenizer.encode
	// does before tiktoken sees it (see kimiChunks).
	kimiChunks bool
	cache      hfCache
	noCache    bool       // benchmarks only: merge every piece anew
	pool       sync.Pool  // *tiktokenScratch
	byteID     [256]int32 // rank of each single byte
	// maxTokBytes is the length of the longest rank's bytes (at least 1).
	maxTokBytes int
}

// Limits on a rank file: Kimi-K2's has 163,584 ranks in about 2.4 MB and
// o200k_base's 199,998 in 3.6 MB, so these leave a wide margin while
// keeping a corrupt or wrong file from exhausting memory.
const (
	maxRankFileBytes = 64 << 20
	maxRanks         = 1 << 21
)

// NewTiktoken builds a tokenizer from the contents of a rank file (see
// ParseTiktokenRanks), a split pattern (one of PatternKimi, PatternO200K,
// PatternCL100K, PatternLlama3, else ErrUnsupported) and special tokens
// (text -> id; ids must not be ranks, texts must be distinct and
// non-empty). bos and eos are ids or -1. name labels errors and Name().
func NewTiktoken(name string, rankFile []byte, pattern string, specials map[string]int32, bos, eos int32) (*Tiktoken, error) {
	kind, ok := knownPatterns[pattern]
	if !ok {
		return nil, fmt.Errorf("%s: %w: split pattern %s (known: Kimi-K2's, o200k_base's, cl100k_base's and Llama 3's)", name, ErrUnsupported, quoteClip(pattern))
	}
	ranks, tokens, err := ParseTiktokenRanks(rankFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return newTiktoken(name, ranks, tokens, kind, specials, bos, eos)
}

// newTiktoken is NewTiktoken after parsing the rank file.
func newTiktoken(name string, ranks map[string]int32, tokens []string, kind splitKind, specials map[string]int32, bos, eos int32) (*Tiktoken, error) {
	t := &Tiktoken{name: "tiktoken:" + name, split: tiktokenSplitter{kind}, ranks: ranks, bos: bos, eos: eos, specials: map[string]int32{}}
	n := len(tokens)
	for s, id := range specials {
		if s == "" || id < 0 || id > MaxTokenID {
			return nil, fmt.Errorf("%s: %w: special token %s with id %d (want a non-empty text and an id from 0 to %d)", name, ErrFormat, quoteClip(s), id, MaxTokenID)
		}
		if int(id) < len(tokens) {
			return nil, fmt.Errorf("%s: %w: special token %s has id %d, which is the rank of %s", name, ErrFormat, quoteClip(s), id, quoteClip(tokens[id]))
		}
		n = max(n, int(id)+1)
	}
	t.tokens = append(tokens, make([]string, n-len(tokens))...)
	t.isToken = make([]bool, n)
	for i := range tokens {
		t.isToken[i] = true
	}
	pats := make([]string, 0, len(specials))
	for s := range specials {
		pats = append(pats, s)
	}
	sort.Strings(pats) // deterministic order; matching is leftmost-longest
	toks := make([]*hfAddedToken, len(pats))
	for i, s := range pats {
		id := specials[s]
		if t.isToken[id] {
			return nil, fmt.Errorf("%s: %w: special tokens %s and %s share id %d", name, ErrFormat, quoteClip(s), quoteClip(t.tokens[id]), id)
		}
		t.tokens[id], t.isToken[id] = s, true
		t.specials[s] = id
		toks[i] = &hfAddedToken{ID: id, Content: s, Special: true}
	}
	var err error
	if t.special, err = newAddedMatcher(pats, toks); err != nil {
		return nil, fmt.Errorf("%s: special tokens: %w", name, err)
	}
	for b := range t.byteID {
		t.byteID[b] = ranks[string([]byte{byte(b)})] // all 256 exist (ParseTiktokenRanks)
	}
	t.maxTokBytes = 1
	for _, tok := range tokens {
		t.maxTokBytes = max(t.maxTokBytes, len(tok))
	}
	for _, id := range []int32{bos, eos} {
		if id >= int32(n) {
			return nil, fmt.Errorf("%s: %w: BOS/EOS id %d is outside the %d ids", name, ErrFormat, id, n)
		}
	}
	return t, nil
}

// ParseTiktokenRanks reads a tiktoken rank file: one token per line, its
// bytes in standard base64 (with padding), ASCII whitespace (Python's
// bytes.split), its rank in decimal
// (tiktoken/load.py load_tiktoken_bpe; empty lines are skipped, "\r\n"
// line ends accepted). It returns ranks (bytes -> rank) and tokens (rank ->
// bytes, as strings). Errors wrap ErrFormat and name the 1-based line: a
// line without exactly two fields, bad base64, a rank that is not a
// non-negative integer, a token or a rank given twice, ranks that are not
// exactly 0..n-1 (a gap), a byte 0x00..0xFF with no single-byte token
// (tiktoken cannot encode it), an empty file, or more than 2^21 ranks or
// 64 MiB.
func ParseTiktokenRanks(data []byte) (map[string]int32, []string, error) {
	if len(data) > maxRankFileBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes, more than the %d MiB a rank file may have", ErrFormat, len(data), maxRankFileBytes>>20)
	}
	lines := bytes.Count(data, []byte{'\n'}) + 1
	if lines > maxRanks+1 {
		return nil, nil, fmt.Errorf("%w: %d lines, more than the %d ranks a rank file may have", ErrFormat, lines, maxRanks)
	}
	ranks := make(map[string]int32, lines)
	lineOf := make([]int32, lines) // rank -> 1-based line, 0 = unseen
	maxRank, count := -1, 0
	for ln := 1; len(data) > 0; ln++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			continue
		}
		// bytes.split() as load_tiktoken_bpe splits: at ASCII whitespace
		// only (strings.Fields also cut at U+00A0, U+3000, ..., making a
		// token and a rank of a line tiktoken refuses).
		f := strings.FieldsFunc(string(line), func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\v' || r == '\f' || r == '\r' || r == '\n'
		})
		if len(f) != 2 {
			return nil, nil, fmt.Errorf("%w: line %d: %s: want \"<base64 token> <rank>\"", ErrFormat, ln, quoteClip(string(line)))
		}
		tok, err := base64.StdEncoding.Strict().DecodeString(f[0])
		if err != nil || len(tok) == 0 {
			return nil, nil, fmt.Errorf("%w: line %d: token %s is not base64 of a non-empty byte string", ErrFormat, ln, quoteClip(f[0]))
		}
		r, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil || r < 0 {
			return nil, nil, fmt.Errorf("%w: line %d: rank %s is not a non-negative 32-bit integer", ErrFormat, ln, quoteClip(f[1]))
		}
		if r >= int64(lines) {
			return nil, nil, fmt.Errorf("%w: line %d: rank %d, but the file has %d lines: ranks must be 0..n-1 without gaps", ErrFormat, ln, r, lines)
		}
		if prev := lineOf[r]; prev != 0 {
			return nil, nil, fmt.Errorf("%w: line %d: rank %d is also the rank of line %d", ErrFormat, ln, r, prev)
		}
		if prev, dup := ranks[string(tok)]; dup {
			return nil, nil, fmt.Errorf("%w: line %d: token %s already has rank %d (line %d)", ErrFormat, ln, quoteClip(string(tok)), prev, lineOf[prev])
		}
		ranks[string(tok)] = int32(r)
		lineOf[r] = int32(ln)
		maxRank, count = max(maxRank, int(r)), count+1
	}
	if count == 0 {
		return nil, nil, fmt.Errorf("%w: no ranks (an empty file)", ErrFormat)
	}
	if maxRank != count-1 {
		missing := 0
		for lineOf[missing] != 0 {
			missing++
		}
		return nil, nil, fmt.Errorf("%w: rank %d is missing: %d ranks must be 0..%d without gaps, but line %d has rank %d", ErrFormat, missing, count, count-1, lineOf[maxRank], maxRank)
	}
	tokens := make([]string, count)
	for s, r := range ranks {
		tokens[r] = s
	}
	for b := 0; b < 256; b++ {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			return nil, nil, fmt.Errorf("%w: no token for the byte 0x%02X (tiktoken needs one for each of the 256 bytes)", ErrFormat, b)
		}
	}
	return ranks, tokens, nil
}

// readRankFile reads path, refusing files over maxRankFileBytes before
// reading them whole.
func readRankFile(path string) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxRankFileBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d MiB a rank file may have", path, ErrFormat, st.Size(), maxRankFileBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRankFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRankFileBytes {
		return nil, fmt.Errorf("%s: %w: more than the %d MiB a rank file may have", path, ErrFormat, maxRankFileBytes>>20)
	}
	return data, nil
}

// Name returns "tiktoken:" and the rank file's name.
func (t *Tiktoken) Name() string { return t.name }

// VocabSize is the largest rank or special id plus one (tiktoken's n_vocab;
// 163840 for Kimi-K2: 163584 ranks and 256 special ids).
func (t *Tiktoken) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence id ([BOS] for Kimi), or -1.
func (t *Tiktoken) BOS() int32 { return t.bos }

// TextBOS is -1: no id goes before a text's ids, whatever BOS is. Kimi's
// TikTokenTokenizer adds no [BOS] to a text (its encode returns tiktoken's
// ids, and PreTrainedTokenizer's build_inputs_with_special_tokens, which
// it keeps, adds nothing), nor does OpenAI tiktoken, so a [BOS] row would
// be one vLLM never runs.
func (t *Tiktoken) TextBOS() int32 { return -1 }

// EOS is the end-of-sequence id ([EOS] for Kimi), or -1.
func (t *Tiktoken) EOS() int32 { return t.eos }

// IsSpecial reports whether id is a special token (for Kimi, every id from
// the number of ranks on: [BOS], <|im_end|>, <|reserved_token_i|>, ...).
func (t *Tiktoken) IsSpecial(id int32) bool {
	return int(id) >= len(t.ranks) && int(id) < len(t.tokens) && t.isToken[id]
}

// SpecialID returns the id of a special token's text.
func (t *Tiktoken) SpecialID(s string) (int32, bool) {
	id, ok := t.specials[s]
	return id, ok
}

// Encode returns tiktoken's ids for text with allowed_special="all": the
// special tokens in the text become their ids, the text between them is
// split by the pattern (each stretch on its own, so `\s+(?!\S)` sees the
// stretch's end) and byte-pair merged. A Kimi tokenizer first cuts the text
// as Kimi's TikTokenTokenizer.encode does (kimiChunks). Invalid UTF-8 is
// an error wrapping ErrInvalidUTF8 (tiktoken takes Python str only).
func (t *Tiktoken) Encode(text string) ([]int32, error) {
	return t.EncodeMax(text, -1)
}

// EncodeMax is Encode that stops once the ids number more than max (max <
// 0: no bound), returning an error wrapping ErrTooManyTokens; the work
// done is then bounded by max tokens and a piece (Kimi cuts pieces at
// 25,000 characters), not by the text's length.
func (t *Tiktoken) EncodeMax(text string, max int) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%s: %w", t.name, ErrInvalidUTF8)
	}
	sc, _ := t.pool.Get().(*tiktokenScratch)
	if sc == nil {
		sc = &tiktokenScratch{}
	}
	defer t.pool.Put(sc)
	ids := make([]int32, 0, capHint(len(text), max))
	stop := false // a piece cannot fit: refused before merging it
	over := func() bool { return stop || (max >= 0 && len(ids) > max) }
	encode := func(s string) {
		for seg := range t.special.segments(s) {
			if over() {
				return
			}
			if seg.id >= 0 {
				ids = append(ids, seg.id)
				continue
			}
			sc.spans = t.split.split(&sc.rt, seg.text, sc.spans[:0])
			for _, sp := range sc.spans {
				// No rank is longer than maxTokBytes, so a piece takes at
				// least len/maxTokBytes ids: one of 10 MB of spaces with
				// o200k's pattern was merged for seconds, then counted.
				if n := sp[1] - sp[0]; max >= 0 && len(ids)+(n+t.maxTokBytes-1)/t.maxTokBytes > max {
					stop = true
				}
				if over() {
					return
				}
				ids = t.bpe(sc, ids, seg.text[sp[0]:sp[1]])
			}
		}
	}
	if !t.kimiChunks {
		if encode(text); over() {
			return nil, tooMany(t.name, max, len(text))
		}
		return ids, nil
	}
	var pieces []string
	for chunk := range kimiChunks(text) {
		pieces = appendRunPieces(pieces[:0], chunk)
		for _, s := range pieces {
			if encode(s); over() {
				return nil, tooMany(t.name, max, len(text))
			}
		}
	}
	return ids, nil
}

// tiktokenScratch is one Encode call's reusable storage.
type tiktokenScratch struct {
	rt    runeText
	spans [][2]int
	syms  []bpeSym
	heap  candHeap
	buf   []byte
}

// bpe appends the ids of one piece: its own rank when it is a token
// (tiktoken checks that before merging), else the merged bytes.
func (t *Tiktoken) bpe(sc *tiktokenScratch, dst []int32, piece string) []int32 {
	if id, ok := t.ranks[piece]; ok {
		return append(dst, id)
	}
	if ids, ok := t.cache.get(piece); ok && !t.noCache {
		return append(dst, ids...)
	}
	syms := sc.syms[:0]
	for i := 0; i < len(piece); i++ {
		syms = append(syms, bpeSym{id: t.byteID[piece[i]], prev: i - 1, next: i + 1})
	}
	syms[len(syms)-1].next = -1
	sc.syms = syms
	mergePairsWith(syms, &sc.heap, func(left, right int32) (int32, float64, bool) {
		sc.buf = append(append(sc.buf[:0], t.tokens[left]...), t.tokens[right]...)
		r, ok := t.ranks[string(sc.buf)]
		return r, float64(r), ok
	})
	start := len(dst)
	dst = liveIDs(syms, dst)
	t.cache.put(piece, dst[start:])
	return dst
}

// DecodePiece returns the bytes of id (prev is not used): a rank's token
// bytes, which may be an incomplete UTF-8 sequence, or a special token's
// text; "" for ids that do not exist.
func (t *Tiktoken) DecodePiece(prev, id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Decode is tiktoken's decode(ids): the bytes of all tokens (special
// tokens as their text) decoded as UTF-8 with errors="replace", each
// maximal invalid subsequence becoming one U+FFFD. Ids that do not exist
// are skipped (tiktoken raises KeyError).
func (t *Tiktoken) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.tokens) && t.isToken[id] {
			b = append(b, t.tokens[id]...)
		}
	}
	return lossyUTF8(b)
}
