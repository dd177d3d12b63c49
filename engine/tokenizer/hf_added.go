package tokenizer

import (
	"fmt"
	"iter"
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
	// hasID and hasContent say the entry gave "id" and "content" (not
	// null): an entry without them decodes to id 0 and "" (UnmarshalJSON).
	hasID, hasContent bool
}

// addedMatcher finds added tokens in text the way HF's AddedVocabulary
// does: leftmost-longest non-overlapping matches (an Aho-Corasick automaton
// with MatchKind::LeftmostLongest there, acAutomaton here), each then
// checked for single_word and widened for lstrip/rstrip (find_matches).
type addedMatcher struct {
	ac   *acAutomaton
	pats []string
	toks []*hfAddedToken
}

// minChunk is the least number of text positions each asks the
// automaton about at once; a chunk also spans the longest pattern, so
// the bytes read again after each chunk are at most the chunk's own.
const minChunk = 64 << 10

// newAddedMatcher returns the matcher of pats, toks[i] being the token of
// pats[i] (nil when there are none). Of identical patterns the first is
// matched. Patterns totalling more than maxAddedBytes give ErrUnsupported.
func newAddedMatcher(pats []string, toks []*hfAddedToken) (*addedMatcher, error) {
	if len(pats) == 0 {
		return nil, nil
	}
	ac, err := newACAutomaton(pats)
	if err != nil {
		return nil, err
	}
	return &addedMatcher{ac: ac, pats: pats, toks: toks}, nil
}

// segment is a piece of text; id >= 0 when it is an added token. A
// segment with err set ends the sequence: the text cannot be split
// (addedMatcher.each).
type segment struct {
	text string
	id   int32
	err  error
}

// segments yields the segments that cover s in order, added tokens
// marked with their id. It finds each only when the loop asks for it, so
// an encoder that stops at a bound (EncodeMax) stops the matching too: a
// text of 48 MB of "<|im_start|>" was cut into 4 million segments (468
// MB) before the bound of 4096 ids refused it.
func (m *addedMatcher) segments(s string) iter.Seq[segment] {
	return func(yield func(segment) bool) {
		if m == nil || s == "" {
			yield(segment{s, -1, nil})
			return
		}
		m.each(s, yield)
	}
}

// each is segments' loop: it calls out for every segment of s until out
// returns false, and returns the number of automaton transitions it
// looked up: at most 4·len(s), as the automaton reads each byte of s once
// and, for each chunk but the last (of at least maxLen positions), at
// most maxLen bytes more (acAutomaton.longest).
func (m *addedMatcher) each(s string, out func(segment) bool) (steps int) {
	best := make([]int32, min(len(s), max(m.ac.maxLen, minChunk)))
	lo, hi := 0, 0 // best[i-lo] is the longest match at i, for lo <= i < hi
	startOffset := 0
	var prev *hfAddedToken // the token that ended at startOffset
	for pos := 0; pos < len(s); {
		if pos >= hi {
			lo, hi = pos, min(len(s), pos+len(best))
			steps += m.ac.longest(s, lo, hi, best[:hi-lo])
		}
		k := best[pos-lo]
		if k < 0 {
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
		// A match inside the whitespace an earlier rstrip token took, its
		// start moved by lstrip to that token's end: HF's find_matches
		// gives it the span (startOffset, stop). Empty, it is dropped
		// with its id (PreTokenizedString::split keeps no empty split);
		// inverted, HF's split_with_indices panics ("AddedVocabulary bad
		// split"), so the text has no HF encoding and is refused.
		if start > stop {
			out(segment{id: -1, err: fmt.Errorf("%w: added token %s (id %d, lstrip) at byte %d lies inside the whitespace that added token %s (id %d, rstrip) took before it; HF tokenizers fails on this text too (AddedVocabulary bad split)",
				ErrUnsupported, quoteClip(m.pats[k]), tok.ID, pos-len(m.pats[k]), quoteClip(prev.Content), prev.ID)})
			return steps
		}
		if startOffset < start && !out(segment{s[startOffset:start], -1, nil}) {
			return steps
		}
		if start < stop && !out(segment{s[start:stop], tok.ID, nil}) {
			return steps
		}
		startOffset, prev = stop, tok
	}
	if startOffset != len(s) {
		out(segment{s[startOffset:], -1, nil})
	}
	return steps
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
