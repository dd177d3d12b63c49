package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"hsdb/engine/jsonerr"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/dlclark/regexp2/syntax"
	"golang.org/x/text/unicode/norm"
)

// hfNormalizer is the "normalizer" of a tokenizer.json; nil means none.
type hfNormalizer func(string) string

type hfComponent struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// maxSequenceDepth bounds how deep Sequence normalizers and
// pre-tokenizers nest in Sequences: tokenizers' own files nest none (a
// Sequence of Split and ByteLevel); each level is decoded again and adds
// to the path errors name, so a file nesting 3,000 took 1 s and gave an
// error of 51 KB.
const maxSequenceDepth = 16

// newHFNormalizer supports null, NFC, NFD, NFKC, NFKD and Sequence of those
// (tokenizers/src/normalizers), nested at most maxSequenceDepth deep
// (depth: the Sequences around this one); anything else is
// ErrUnsupported.
func newHFNormalizer(raw json.RawMessage, path string, depth int) (hfNormalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if depth > maxSequenceDepth {
		return nil, fmt.Errorf("%w: %s: Sequence normalizers nested more than %d deep", ErrUnsupported, path, maxSequenceDepth)
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, path, jsonerr.Explain(err))
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Sequence":
		var seq []hfNormalizer
		for i, sub := range c.Normalizers {
			n, err := newHFNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		if len(seq) == 0 {
			return nil, nil
		}
		return func(s string) string {
			for _, n := range seq {
				s = n(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("%w: %s type %s (supported: NFC, NFD, NFKC, NFKD, Sequence)", ErrUnsupported, path, quoteClip(c.Type))
}

// hfPreTokenizer splits every piece of a pre-tokenized string further (HF's
// PreTokenizedString.split); empty pieces are dropped.
type hfPreTokenizer func(pieces []string) ([]string, error)

// gpt2Pattern is the split regex of HF's ByteLevel pre-tokenizer with
// use_regex (pre_tokenizers/byte_level.rs, from openai/gpt-2 encoder.py).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// newHFPreTokenizer supports Sequence (nested at most maxSequenceDepth
// deep; depth: the Sequences around this one), Split and ByteLevel. It
// reports whether a ByteLevel step is present (the byte-level BPE this
// package implements needs one).
func newHFPreTokenizer(raw json.RawMessage, path string, depth int) (hfPreTokenizer, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	if depth > maxSequenceDepth {
		return nil, false, fmt.Errorf("%w: %s: Sequence pre-tokenizers nested more than %d deep", ErrUnsupported, path, maxSequenceDepth)
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, false, fmt.Errorf("%w: %s: %v", ErrFormat, path, jsonerr.Explain(err))
	}
	switch c.Type {
	case "Sequence":
		var seq []hfPreTokenizer
		byteLevel := false
		for i, sub := range c.PreTokenizers {
			p, bl, err := newHFPreTokenizer(sub, fmt.Sprintf("%s.pretokenizers[%d]", path, i), depth+1)
			if err != nil {
				return nil, false, err
			}
			byteLevel = byteLevel || bl
			if p != nil {
				seq = append(seq, p)
			}
		}
		return func(pieces []string) ([]string, error) {
			var err error
			for _, p := range seq {
				if pieces, err = p(pieces); err != nil {
					return nil, err
				}
			}
			return pieces, nil
		}, byteLevel, nil
	case "Split":
		if c.Pattern == nil || (c.Pattern.Regex == nil) == (c.Pattern.String == nil) {
			return nil, false, fmt.Errorf("%w: %s: pattern must have exactly one of Regex, String", ErrFormat, path)
		}
		var re *regexp2.Regexp
		if c.Pattern.Regex != nil {
			var err error
			if re, err = compileHFRegex(*c.Pattern.Regex); err != nil {
				return nil, false, fmt.Errorf("%s: %w", path, err)
			}
		} else if *c.Pattern.String != "" {
			re = regexp2.MustCompile(regexp2.Escape(*c.Pattern.String), regexp2.None)
		}
		behavior, err := splitBehavior(c.Behavior, path)
		if err != nil {
			return nil, false, err
		}
		invert := c.Invert
		return func(pieces []string) ([]string, error) {
			return eachPiece(pieces, func(s string) ([]string, error) {
				m, err := findMatches(re, s)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", path, err)
				}
				if invert {
					for i := range m {
						m[i].match = !m[i].match
					}
				}
				return applyBehavior(s, m, behavior), nil
			})
		}, false, nil
	case "ByteLevel":
		useRegex := c.UseRegex == nil || *c.UseRegex
		var re *regexp2.Regexp
		if useRegex {
			re = regexp2.MustCompile(gpt2Pattern, regexp2.None)
		}
		addPrefix := c.AddPrefixSpace
		return func(pieces []string) ([]string, error) {
			out, err := eachPiece(pieces, func(s string) ([]string, error) {
				if addPrefix && (s == "" || s[0] != ' ') {
					s = " " + s
				}
				if re == nil {
					return []string{s}, nil
				}
				m, err := findMatches(re, s)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", path, err)
				}
				return applyBehavior(s, m, behaviorIsolated), nil
			})
			for i, s := range out {
				out[i] = byteLevelEncode(s)
			}
			return out, err
		}, true, nil
	}
	return nil, false, fmt.Errorf("%w: %s type %s (supported: Sequence, Split, ByteLevel)", ErrUnsupported, path, quoteClip(c.Type))
}

// maxRegexBytes bounds a tokenizer.json Split pattern: regexp2 backtracks,
// and a pattern of 10,000 nested groups took 4 s to split 13 KB of text.
// The longest pattern of a released tokenizer hsdb reads (o200k's, in
// tokenizer.json form) is about 500 bytes.
const maxRegexBytes = 4096

// compileHFRegex compiles a tokenizer.json pattern, which HF runs with
// Oniguruma (Ruby syntax), with regexp2 (.NET syntax): both have Unicode
// classes, (?i:...) groups and look-around. The anchors differ (Ruby's ^ and
// $ match at every line, .NET's only at the ends), so patterns using them
// are refused rather than matched differently.
func compileHFRegex(p string) (*regexp2.Regexp, error) {
	if len(p) > maxRegexBytes {
		return nil, fmt.Errorf("%w: regex %.60q...: a pattern of %d bytes, more than the %d hsdb compiles (released tokenizers' patterns are under 1 KiB)", ErrUnsupported, p, len(p), maxRegexBytes)
	}
	if hasLineAnchor(p) {
		return nil, fmt.Errorf("%w: regex %s uses ^ or $, whose meaning differs between Oniguruma and regexp2", ErrUnsupported, quoteClip(p))
	}
	re, err := regexp2.Compile(p, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%w: regex %s: %s", ErrUnsupported, quoteClip(p), regexComplaint(err))
	}
	re.MatchTimeout = hfMatchTimeout
	return re, nil
}

// regexComplaint is what regexp2 says of a pattern it cannot compile,
// without the pattern: its syntax.Error appends the whole pattern (up to
// maxRegexBytes), which the caller quotes clipped instead.
func regexComplaint(err error) string {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	msg := se.Code.String()
	if len(se.Args) > 0 {
		msg = fmt.Sprintf(msg, se.Args...)
	}
	if len(msg) > 200 { // an argument may be a group name of the pattern
		msg = strings.ToValidUTF8(msg[:200], "") + "..."
	}
	return msg
}

// hfMatchTimeout bounds one match of a tokenizer.json pattern. regexp2
// backtracks, so a short pattern of nested repeats is exponential in the
// text: "(\p{L}+)+!" took 13 s for 26 letters and would never end for
// 40. Oniguruma, which HF tokenizers run, bounds the same backtracking by
// a retry count (ONIG_RETRY_LIMIT_IN_MATCH, 10,000,000); regexp2 offers a
// time instead. A released pattern's match takes microseconds. A variable
// so that a test can lower it.
var hfMatchTimeout = 5 * time.Second

// hasLineAnchor reports whether p has an unescaped ^ or $ outside a
// character class ([^...] negation does not count).
func hasLineAnchor(p string) bool {
	inClass := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' { // "[]...]" or "[^]...]": literal ]
				i++
			}
		case c == '^' || c == '$':
			return true
		}
	}
	return false
}

func eachPiece(pieces []string, f func(string) ([]string, error)) ([]string, error) {
	out := make([]string, 0, len(pieces))
	for _, p := range pieces {
		parts, err := f(p)
		if err != nil {
			return nil, err
		}
		for _, s := range parts {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// span is a byte range of a string and whether the pattern matched it.
type span struct {
	start, end int
	match      bool
}

// findMatches covers s with the matches of re and the gaps between them, as
// HF's Pattern::find_matches does (tokenizer/pattern.rs). A nil re matches
// nothing. regexp2 reports rune positions; they are turned into byte
// offsets.
func findMatches(re *regexp2.Regexp, s string) ([]span, error) {
	if s == "" {
		return []span{{0, 0, false}}, nil
	}
	if re == nil {
		return []span{{0, len(s), false}}, nil
	}
	runes := []rune(s)
	byteOff := make([]int, len(runes)+1)
	o := 0
	for i, r := range runes {
		byteOff[i] = o
		o += len(string(r))
	}
	byteOff[len(runes)] = o
	var out []span
	prev := 0
	m, err := re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		start, end := byteOff[m.Index], byteOff[m.Index+m.Length]
		if prev != start {
			out = append(out, span{prev, start, false})
		}
		out = append(out, span{start, end, true})
		prev = end
	}
	if err != nil {
		// regexp2's timeout error quotes the whole text: not repeated.
		return nil, fmt.Errorf("%w: regex %.200q: one match took more than %v on a piece of %d bytes (nested repeats backtrack without end; Oniguruma stops them by a retry limit)", ErrUnsupported, re.String(), re.MatchTimeout, len(s))
	}
	if prev != len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out, nil
}

// preTokDrops reports whether the pre-tokenizer raw (a valid one:
// newHFPreTokenizer accepted it) may drop text: a Split with behavior
// Removed, at any depth of a Sequence. Every other step keeps each byte of
// its input as one character of the words (ByteLevel maps a byte to a
// character and may add a space), which HF.EncodeMax's bound on a
// segment's ids relies on.
func preTokDrops(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var c hfComponent
	if json.Unmarshal(raw, &c) != nil {
		return true
	}
	if c.Type == "Split" && c.Behavior == "Removed" {
		return true
	}
	for _, sub := range c.PreTokenizers {
		if preTokDrops(sub) {
			return true
		}
	}
	return false
}

// Split behaviors (tokenizer/normalizer.rs SplitDelimiterBehavior).
const (
	behaviorRemoved = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

func splitBehavior(name, path string) (int, error) {
	switch name {
	case "Removed":
		return behaviorRemoved, nil
	case "Isolated":
		return behaviorIsolated, nil
	case "MergedWithPrevious":
		return behaviorMergedWithPrevious, nil
	case "MergedWithNext":
		return behaviorMergedWithNext, nil
	case "Contiguous":
		return behaviorContiguous, nil
	}
	return 0, fmt.Errorf("%w: %s: split behavior %s", ErrFormat, path, quoteClip(name))
}

// applyBehavior turns the spans of s into pieces, as NormalizedString::split
// does for each SplitDelimiterBehavior.
func applyBehavior(s string, spans []span, behavior int) []string {
	type part struct {
		start, end int
		remove     bool
	}
	var parts []part
	switch behavior {
	case behaviorIsolated:
		for _, sp := range spans {
			parts = append(parts, part{sp.start, sp.end, false})
		}
	case behaviorRemoved:
		for _, sp := range spans {
			parts = append(parts, part{sp.start, sp.end, sp.match})
		}
	case behaviorContiguous:
		prevMatch := false
		for _, sp := range spans {
			if sp.match == prevMatch && len(parts) > 0 {
				parts[len(parts)-1].end = sp.end
			} else {
				parts = append(parts, part{sp.start, sp.end, false})
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for _, sp := range spans {
			if sp.match && !prevMatch && len(parts) > 0 {
				parts[len(parts)-1].end = sp.end
			} else {
				parts = append(parts, part{sp.start, sp.end, false})
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prevMatch && len(parts) > 0 {
				parts[len(parts)-1].start = sp.start
			} else {
				parts = append(parts, part{sp.start, sp.end, false})
			}
			prevMatch = sp.match
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if !p.remove {
			out = append(out, s[p.start:p.end])
		}
	}
	return out
}
