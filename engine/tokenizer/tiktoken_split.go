package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split patterns the Tiktoken type knows, verbatim as their sources
// write them. tiktoken runs them with fancy-regex (Rust: leftmost-first
// alternation, backtracking, Unicode classes of the regex crate); Go's
// regexp has neither the look-ahead `\s+(?!\S)` nor Kimi's class
// intersection `[...&&[^\p{Han}]]`, and dlclark/regexp2 has no `&&`,
// possessive quantifiers or Rust's case folding of (?i)'s to 'ſ, so each
// pattern is matched by hand-written code (tiktokenSplitter) that returns
// the match a backtracking engine returns, alternative by alternative.
const (
	// PatternKimi is Kimi-K2's pat_str (moonshotai Kimi-K2 / Kimi-K2.5
	// tokenization_kimi.py, TikTokenTokenizer.pat_str): o200k's pattern with
	// runs of Han characters split off first and Han removed from the
	// letter classes.
	PatternKimi = `[\p{Han}]+` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}` +
		`| ?[^\s\p{L}\p{N}]+[\r\n]*` +
		`|\s*[\r\n]+` +
		`|\s+(?!\S)` +
		`|\s+`
	// PatternO200K is o200k_base's pat_str (openai/tiktoken
	// tiktoken_ext/openai_public.py, 0.14.0).
	PatternO200K = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}` +
		`| ?[^\s\p{L}\p{N}]+[\r\n/]*` +
		`|\s*[\r\n]+` +
		`|\s+(?!\S)` +
		`|\s+`
	// PatternCL100K is cl100k_base's pat_str as tiktoken 0.14.0 writes it
	// (possessive quantifiers; `\s++$` before `\s*[\r\n]`).
	PatternCL100K = `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
	// PatternLlama3 is the cl100k pattern as tiktoken wrote it before its
	// possessive rewrite, and Meta Llama 3's tokenizer.py pat_str. It
	// splits a trailing whitespace run holding a newline ("\n  " at the end
	// of the text) into "\n", "  " where PatternCL100K keeps it whole.
	PatternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitKind selects the hand-written matcher of one known pattern.
type splitKind int

const (
	splitKimi splitKind = iota
	splitO200K
	splitCL100K
	splitLlama3
)

// knownPatterns maps each pattern string to its matcher.
var knownPatterns = map[string]splitKind{
	PatternKimi:   splitKimi,
	PatternO200K:  splitO200K,
	PatternCL100K: splitCL100K,
	PatternLlama3: splitLlama3,
}

// Character class bits of one rune, as the regex crate defines them
// (Unicode general categories; \s is the White_Space property; \p{Han} is
// Script=Han, not Script_Extensions). Go's tables are Unicode 15.0; the
// regex crate's may be newer, so characters assigned later can differ.
const (
	cL   uint8 = 1 << iota // \p{L}
	cN                     // \p{N}
	cS                     // \s
	cUp                    // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLo                    // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cHan                   // \p{Han}
	cNL                    // \r or \n
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiClass[r] = classOf(r)
	}
}

func classOf(r rune) uint8 {
	var c uint8
	switch {
	case unicode.IsLetter(r):
		c = cL
		switch {
		case unicode.IsUpper(r), unicode.IsTitle(r):
			c |= cUp
		case unicode.IsLower(r):
			c |= cLo
		default: // Lm, Lo
			c |= cUp | cLo
		}
	case unicode.IsMark(r):
		c = cUp | cLo
	case unicode.IsNumber(r):
		c = cN
	case unicode.Is(unicode.White_Space, r):
		c = cS
		if r == '\r' || r == '\n' {
			c |= cNL
		}
	}
	if r >= 0x2E80 && unicode.Is(unicode.Han, r) {
		c |= cHan
	}
	return c
}

// runeText is a piece of text decoded once for matching: its runes, their
// classes and byte offsets (off has one more entry: len(text)).
type runeText struct {
	r   []rune
	cls []uint8
	off []int
}

func (t *runeText) reset(s string) {
	t.r, t.cls, t.off = t.r[:0], t.cls[:0], t.off[:0]
	for i, r := range s {
		c := uint8(0)
		if r < utf8.RuneSelf {
			c = asciiClass[r]
		} else {
			c = classOf(r)
		}
		t.r, t.cls, t.off = append(t.r, r), append(t.cls, c), append(t.off, i)
	}
	t.off = append(t.off, len(s))
}

// tiktokenSplitter cuts text into the pieces tiktoken's regex.find_iter
// yields for one known pattern; text no alternative matches (none of the
// known patterns leaves any) is dropped, as find_iter drops it.
type tiktokenSplitter struct{ kind splitKind }

// split appends the byte ranges [start, end) of the pieces of s to dst.
func (sp tiktokenSplitter) split(t *runeText, s string, dst [][2]int) [][2]int {
	t.reset(s)
	n := len(t.r)
	for i := 0; i < n; {
		var e int
		switch sp.kind {
		case splitKimi, splitO200K:
			e = t.matchO200K(i, sp.kind == splitKimi)
		default:
			e = t.matchCL100K(i, sp.kind == splitCL100K)
		}
		if e <= i {
			i++
			continue
		}
		dst = append(dst, [2]int{t.off[i], t.off[e]})
		i = e
	}
	return dst
}

// P is [^\r\n\p{L}\p{N}]; Q is [^\s\p{L}\p{N}].
func (t *runeText) isP(i int) bool { return t.cls[i]&(cNL|cL|cN) == 0 }
func (t *runeText) isQ(i int) bool { return t.cls[i]&(cS|cL|cN) == 0 }

// isUp and isLo are o200k's upper and lower classes; with noHan, Kimi's
// intersections with [^\p{Han}].
func (t *runeText) isUp(i int, noHan bool) bool {
	c := t.cls[i]
	return c&cUp != 0 && !(noHan && c&cHan != 0)
}

func (t *runeText) isLo(i int, noHan bool) bool {
	c := t.cls[i]
	return c&cLo != 0 && !(noHan && c&cHan != 0)
}

// upperRun is the start of the two letter alternatives of Kimi's pattern,
// `[^\r\n\p{L}\p{N}]?` then `UP*` or `UP+`: pass 0 takes the optional
// P at i (ok false when i is not one), pass 1 leaves it out; p is where the
// letters start and k the end of the longest run of UP from p.
func (t *runeText) upperRun(i, pass int, noHan bool) (p, k int, ok bool) {
	p = i
	if pass == 0 {
		if !t.isP(i) {
			return 0, 0, false
		}
		p = i + 1
	}
	k = p
	for k < len(t.r) && t.isUp(k, noHan) {
		k++
	}
	return p, k, true
}

// foldContraction maps a rune to what (?i) makes it equal among the
// letters of 's|'t|'re|'ve|'m|'ll|'d: ASCII case, and U+017F (ſ), whose
// simple case folding is 's'.
func foldContraction(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r == 'ſ':
		return 's'
	}
	return r
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or -1.
func (t *runeText) contraction(i int) int {
	n := len(t.r)
	if i+1 >= n || t.r[i] != '\'' {
		return -1
	}
	switch foldContraction(t.r[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < n && foldContraction(t.r[i+2]) == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < n && foldContraction(t.r[i+2]) == 'l' {
			return i + 3
		}
	}
	return -1
}

// optContraction is `(?i:...)?` after a word ending at e.
func (t *runeText) optContraction(e int) int {
	if c := t.contraction(e); c > 0 {
		return c
	}
	return e
}

// matchO200K returns the end of the match at i of PatternO200K, or with
// kimi of PatternKimi, or -1.
func (t *runeText) matchO200K(i int, kimi bool) int {
	n := len(t.r)
	if kimi && t.cls[i]&cHan != 0 { // [\p{Han}]+
		e := i + 1
		for e < n && t.cls[e]&cHan != 0 {
			e++
		}
		return e
	}
	// P? UP* LO+ C?: P taken first, then not (P ∩ UP are the marks);
	// UP* gives back one rune at a time until LO+ can start.
	for pass := 0; pass < 2; pass++ {
		p, k, ok := t.upperRun(i, pass, kimi)
		if !ok {
			continue
		}
		for j := k; j >= p; j-- {
			if j < n && t.isLo(j, kimi) {
				e := j + 1
				for e < n && t.isLo(e, kimi) {
					e++
				}
				return t.optContraction(e)
			}
		}
	}
	// P? UP+ LO* C?
	for pass := 0; pass < 2; pass++ {
		p, k, ok := t.upperRun(i, pass, kimi)
		if !ok {
			continue
		}
		if k == p {
			continue
		}
		for k < n && t.isLo(k, kimi) {
			k++
		}
		return t.optContraction(k)
	}
	if e := t.digits(i); e > 0 {
		return e
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`, o200k's ending in [\r\n/]* (which
	// takes "\n//" after "</div>").
	if e := t.punct(i, !kimi); e > 0 {
		return e
	}
	if t.cls[i]&cS == 0 {
		return -1
	}
	k := t.spaceRun(i)
	if e := t.lastNewline(i, k); e > 0 { // \s*[\r\n]+
		return e
	}
	if k == n { // \s+(?!\S)
		return k
	}
	if k-i >= 2 {
		return k - 1
	}
	return k // \s+
}

// matchCL100K returns the end of the match at i of PatternCL100K
// (possessive) or, with possessive false, of PatternLlama3, or -1.
func (t *runeText) matchCL100K(i int, possessive bool) int {
	n := len(t.r)
	if e := t.contraction(i); e > 0 {
		return e
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ (giving the optional rune back cannot help:
	// a rune in P is not a letter)
	p := i
	if t.isP(i) {
		p = i + 1
	}
	if p < n && t.cls[p]&cL != 0 {
		e := p + 1
		for e < n && t.cls[e]&cL != 0 {
			e++
		}
		return e
	}
	if e := t.digits(i); e > 0 {
		return e
	}
	if e := t.punct(i, false); e > 0 {
		return e
	}
	if t.cls[i]&cS == 0 {
		return -1
	}
	k := t.spaceRun(i)
	if possessive && k == n { // \s++$
		return k
	}
	if e := t.lastNewline(i, k); e > 0 { // \s*[\r\n] or \s*[\r\n]+
		return e
	}
	if k == n { // \s+(?!\S)
		return k
	}
	if k-i >= 2 {
		return k - 1
	}
	return i + 1 // \s or \s+ (a single whitespace rune here)
}

// digits is \p{N}{1,3}.
func (t *runeText) digits(i int) int {
	e := i
	for e < len(t.r) && e < i+3 && t.cls[e]&cN != 0 {
		e++
	}
	if e == i {
		return -1
	}
	return e
}

// punct is ` ?[^\s\p{L}\p{N}]+[\r\n]*`, or with slash o200k's
// ` ?[^\s\p{L}\p{N}]+[\r\n/]*` (without the space, the class cannot
// match at a space, so the optional space is never given back).
func (t *runeText) punct(i int, slash bool) int {
	n := len(t.r)
	p := i
	if t.r[i] == ' ' {
		p = i + 1
	}
	if p >= n || !t.isQ(p) {
		return -1
	}
	e := p + 1
	for e < n && t.isQ(e) {
		e++
	}
	for e < n && (t.cls[e]&cNL != 0 || (slash && t.r[e] == '/')) {
		e++
	}
	return e
}

// spaceRun returns the end of the maximal \s run starting at i.
func (t *runeText) spaceRun(i int) int {
	k := i
	for k < len(t.r) && t.cls[k]&cS != 0 {
		k++
	}
	return k
}

// lastNewline is `\s*[\r\n]+` within the whitespace run [i, k): greedy \s*
// gives back runes until [\r\n]+ matches, so the match ends just after the
// run's last \r or \n; -1 when it has none.
func (t *runeText) lastNewline(i, k int) int {
	for j := k - 1; j >= i; j-- {
		if t.cls[j]&cNL != 0 {
			return j + 1
		}
	}
	return -1
}
