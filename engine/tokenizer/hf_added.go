package tokenizer

import (
	"iter"
	"sort"
	"unicode"
	"unicode/utf8"
)

// hfAddedToken is one entry of tokenizer.json "added_tokens"
// (tokenizer/added_vocabulary.rs AddedToken).
type hfAddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text the way HF's AddedVocabulary
// does: leftmost-longest non-overlapping matches (an Aho-Corasick automaton
// with MatchKind::LeftmostLongest there), each then checked for single_word
// and widened for lstrip/rstrip (find_matches).
type addedMatcher struct {
	first   [256]bool      // whether some pattern starts with the byte
	byFirst map[byte][]int // first byte -> indexes into pats, longest first
	pats    []string
	toks    []*hfAddedToken
}

func newAddedMatcher(pats []string, toks []*hfAddedToken) *addedMatcher {
	if len(pats) == 0 {
		return nil
	}
	m := &addedMatcher{byFirst: map[byte][]int{}, pats: pats, toks: toks}
	for i, p := range pats {
		if p == "" {
			continue
		}
		m.byFirst[p[0]] = append(m.byFirst[p[0]], i)
		m.first[p[0]] = true
	}
	for _, idx := range m.byFirst {
		sort.SliceStable(idx, func(a, b int) bool { return len(pats[idx[a]]) > len(pats[idx[b]]) })
	}
	return m
}

// segment is a piece of text; id >= 0 when it is an added token.
type segment struct {
	text string
	id   int32
}

// segments yields the segments that cover s in order, added tokens
// marked with their id. It finds each only when the loop asks for it, so
// an encoder that stops at a bound (EncodeMax) stops the matching too: a
// text of 48 MB of "<|im_start|>" was cut into 4 million segments (468
// MB) before the bound of 4096 ids refused it.
func (m *addedMatcher) segments(s string) iter.Seq[segment] {
	return func(yield func(segment) bool) {
		if m == nil || s == "" {
			yield(segment{s, -1})
			return
		}
		m.each(s, yield)
	}
}

// each is segments' loop: it calls out for every segment of s until out
// returns false.
func (m *addedMatcher) each(s string, out func(segment) bool) {
	startOffset := 0
	for pos := 0; pos < len(s); {
		k, ok := m.longestAt(s, pos)
		if !ok {
			pos++
			continue
		}
		start, stop := pos, pos+len(m.pats[k])
		pos = stop // the automaton resumes after the match, kept or not
		tok := m.toks[k]
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			start = max(leftmostSpaceAtEnd(s[:start]), startOffset)
		}
		if tok.RStrip {
			stop += rightmostSpaceAtStart(s[stop:])
		}
		if startOffset < start && !out(segment{s[startOffset:start], -1}) {
			return
		}
		if !out(segment{s[start:stop], tok.ID}) {
			return
		}
		startOffset = stop
	}
	if startOffset != len(s) {
		out(segment{s[startOffset:], -1})
	}
}

func (m *addedMatcher) longestAt(s string, pos int) (int, bool) {
	if !m.first[s[pos]] {
		return 0, false
	}
	for _, k := range m.byFirst[s[pos]] {
		p := m.pats[k]
		if len(p) <= len(s)-pos && s[pos:pos+len(p)] == p {
			return k, true
		}
	}
	return 0, false
}

// isWordRune is Rust regex's Unicode \w: Alphabetic, marks, decimal
// numbers, connector punctuation and Join_Control.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) ||
		unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Join_Control, r)
}

// isSpaceRune is Rust regex's Unicode \s: the White_Space property.
func isSpaceRune(r rune) bool { return unicode.Is(unicode.White_Space, r) }

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordRune(r)
}

// leftmostSpaceAtEnd is the start of the whitespace run ending s (`\s*$`).
func leftmostSpaceAtEnd(s string) int {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !isSpaceRune(r) {
			break
		}
		i -= n
	}
	return i
}

// rightmostSpaceAtStart is the length of the whitespace run starting s (`^\s*`).
func rightmostSpaceAtStart(s string) int {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isSpaceRune(r) {
			break
		}
		i += n
	}
	return i
}
