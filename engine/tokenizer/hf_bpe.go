package tokenizer

import (
	"encoding/json"
	"fmt"
	"hsdb/engine/jsonerr"
	"strings"
	"sync"
	"unicode/utf8"
)

// hfBPE is the BPE model of an HF tokenizer.json ("model": {"type": "BPE"}),
// following tokenizers/src/models/bpe (model.rs merge_word, word.rs
// merge_all): a word starts as one symbol per character (byte-fallback
// pieces or the unknown token for characters missing from the vocabulary),
// then the adjacent pair with the lowest merge rank is merged, leftmost
// first, until no pair has a merge.
type hfBPE struct {
	cache        hfCache
	vocab        map[string]int32
	merges       map[uint64]hfMerge // key: left id << 32 | right id
	unk          int32              // -1 when unk_token is null
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	maxRunes     int // characters of the longest vocabulary token
}

type hfMerge struct {
	rank int32 // index in the merges list; lower merges first
	id   int32 // id of the merged token
}

type hfBPEJSON struct {
	Type                    string           `json:"type"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	FuseUnk                 bool             `json:"fuse_unk"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int32 `json:"vocab"`
	Merges                  json.RawMessage  `json:"merges"`
}

func newHFBPE(raw json.RawMessage) (*hfBPE, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("%w: \"model\" is missing", ErrFormat)
	}
	var m hfBPEJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: \"model\": %v", ErrFormat, jsonerr.Explain(err))
	}
	if m.Type != "BPE" {
		return nil, fmt.Errorf("%w: model type %s (only BPE is supported)", ErrUnsupported, quoteClip(m.Type))
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fmt.Errorf("%w: BPE dropout %g (encoding would be random)", ErrUnsupported, *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("%w: BPE continuing_subword_prefix %s", ErrUnsupported, quoteClip(*m.ContinuingSubwordPrefix))
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("%w: BPE end_of_word_suffix %s", ErrUnsupported, quoteClip(*m.EndOfWordSuffix))
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("%w: model.vocab is empty", ErrFormat)
	}
	b := &hfBPE{vocab: m.Vocab, unk: -1, fuseUnk: m.FuseUnk, byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges}
	for tok, id := range m.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("%w: model.vocab[%s] = %d, want >= 0", ErrFormat, quoteClip(tok), id)
		}
		b.maxRunes = max(b.maxRunes, utf8.RuneCountInString(tok))
	}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("%w: model.unk_token %s is not in model.vocab", ErrFormat, quoteClip(*m.UnkToken))
		}
		b.unk = id
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]hfMerge, len(pairs))
	for rank, p := range pairs {
		l, ok1 := m.Vocab[p[0]]
		r, ok2 := m.Vocab[p[1]]
		id, ok3 := m.Vocab[p[0]+p[1]]
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("%w: model.merges[%d] %s + %s: a part or the merged token %s is not in model.vocab", ErrFormat, rank, quoteClip(p[0]), quoteClip(p[1]), quoteClip(p[0]+p[1]))
		}
		// A repeated pair keeps its last rank, as HF's HashMap collect does.
		b.merges[uint64(uint32(l))<<32|uint64(uint32(r))] = hfMerge{rank: int32(rank), id: id}
	}
	return b, nil
}

// parseMerges accepts both serializations HF writes: ["a b", ...] (legacy,
// exactly one space) and [["a", "b"], ...] (tokenizers >= 0.20).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: model.merges: %v", ErrFormat, jsonerr.Explain(err))
	}
	out := make([][2]string, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err == nil {
			parts := strings.Split(s, " ")
			if len(parts) != 2 {
				return nil, fmt.Errorf("%w: model.merges[%d] %s: want two tokens separated by one space", ErrFormat, i, quoteClip(s))
			}
			out[i] = [2]string{parts[0], parts[1]}
			continue
		}
		var p []string
		if err := json.Unmarshal(it, &p); err != nil || len(p) != 2 {
			return nil, fmt.Errorf("%w: model.merges[%d] %s: want \"a b\" or [\"a\", \"b\"]", ErrFormat, i, briefJSON(it))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// minTokens is a lower bound on the number of ids of a pre-tokenized word:
// each id is a vocabulary token of at most maxRunes characters of the word
// (a byte-fallback or unknown piece covers one character or part of one),
// except a fused run of unknown characters (fuse_unk), which may cover any
// number: then 1.
func (b *hfBPE) minTokens(word string) int {
	return b.minTokensOf(utf8.RuneCountInString(word))
}

// minTokensOf is minTokens of a word, or of words, of n characters in all.
func (b *hfBPE) minTokensOf(n int) int {
	if n == 0 {
		return 0
	}
	if (b.fuseUnk && b.unk >= 0) || b.maxRunes < 1 {
		return 1
	}
	return (n + b.maxRunes - 1) / b.maxRunes
}

// tokenize appends the ids of one pre-tokenized word to dst.
func (b *hfBPE) tokenize(dst []int32, word string) []int32 {
	if word == "" {
		return dst
	}
	if b.ignoreMerges {
		if id, ok := b.vocab[word]; ok {
			return append(dst, id)
		}
	}
	if ids, ok := b.cache.get(word); ok {
		return append(dst, ids...)
	}
	start := len(dst)
	dst = b.merge(dst, word)
	b.cache.put(word, dst[start:])
	return dst
}

// merge appends the BPE ids of word to dst (tokenize without the cache).
func (b *hfBPE) merge(dst []int32, word string) []int32 {
	syms := make([]bpeSym, 0, len(word))
	add := func(id int32) {
		syms = append(syms, bpeSym{id: id, prev: len(syms) - 1, next: len(syms) + 1})
	}
	unkPending := false
	for i, r := range word {
		ch := word[i : i+len(string(r))]
		if id, ok := b.vocab[ch]; ok {
			if unkPending {
				add(b.unk)
				unkPending = false
			}
			add(id)
			continue
		}
		if b.byteFallback {
			if ids, ok := b.byteFallbackIDs(ch); ok {
				// HF adds these without flushing a pending unknown token,
				// which therefore lands after them (model.rs merge_word).
				for _, id := range ids {
					add(id)
				}
				continue
			}
		}
		if b.unk >= 0 {
			if unkPending && !b.fuseUnk {
				add(b.unk)
			}
			unkPending = true
		}
		// No vocabulary entry, byte fallback or unk_token: HF drops the
		// character; so does this.
	}
	if unkPending {
		add(b.unk)
	}
	if len(syms) == 0 {
		return dst
	}
	syms[len(syms)-1].next = -1
	b.mergeAll(syms)
	for i := 0; i >= 0; i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	return dst
}

func (b *hfBPE) byteFallbackIDs(ch string) ([]int32, bool) {
	ids := make([]int32, len(ch))
	for i := 0; i < len(ch); i++ {
		id, ok := b.vocab[fmt.Sprintf("<0x%02X>", ch[i])]
		if !ok {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

// hfCache remembers the ids of short words, as HF's BPE cache does (it
// holds 10000 words there); it is safe for concurrent use.
type hfCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const (
	hfCacheWords   = 10000
	hfCacheWordLen = 256 // bytes; longer words are not cached
)

func (c *hfCache) get(word string) ([]int32, bool) {
	if len(word) > hfCacheWordLen {
		return nil, false
	}
	c.mu.RLock()
	ids, ok := c.m[word]
	c.mu.RUnlock()
	return ids, ok
}

func (c *hfCache) put(word string, ids []int32) {
	if len(word) > hfCacheWordLen {
		return
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string][]int32)
	}
	if len(c.m) < hfCacheWords {
		c.m[word] = append([]int32(nil), ids...)
	}
	c.mu.Unlock()
}

// mergeAll merges syms in place: lowest rank first, then lowest position,
// as word.rs merge_all's BinaryHeap orders Merge{pos, rank, new_id}.
func (b *hfBPE) mergeAll(syms []bpeSym) {
	mergePairs(syms, func(left, right int32) (int32, float64, bool) {
		m, ok := b.merges[uint64(uint32(left))<<32|uint64(uint32(right))]
		return m.id, float64(m.rank), ok
	})
}
