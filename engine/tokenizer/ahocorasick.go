package tokenizer

import (
	"fmt"
	"sort"
)

// maxAddedBytes bounds the total bytes of the patterns one acAutomaton is
// built from (an HF file's added tokens, a tiktoken file's special
// tokens, a SentencePiece model's control and user-defined pieces). The
// automaton holds up to one state per pattern byte, 13 bytes each, and
// building it allocates about 15 bytes per pattern byte, so 16 MiB of
// patterns ask for at most about 250 MB; released tokenizers have
// kilobytes of added tokens, while a file of MaxFileBytes (512 MB) of
// them would ask for 8 GB.
const maxAddedBytes = 16 << 20

// acAutomaton gives, for each position of a text, the longest of a set of
// patterns that starts there. It is an Aho-Corasick automaton (Aho and
// Corasick 1975) built over the reversed patterns and run over the text
// backwards: after reading s[i:] backwards, its state is the longest
// prefix of s[i:] that is a suffix of some pattern, and out of that state
// is the longest pattern that s[i:] starts with. Leftmost-longest matching
// (addedMatcher.each) then reads these answers left to right. The cost is
// O(len(s) + total pattern bytes), whatever the patterns: the matcher it
// replaces compared every pattern sharing a first byte at every position,
// O(len(s) × patterns × pattern length).
//
// States are numbered breadth first with each state's children
// consecutive and sorted by byte, so the children of state v are the
// states childStart[v] to childStart[v+1]-1, found by binary search on
// label. It is written here, not taken from a library, because finding
// added tokens exactly as HF tokenizers does is part of what this package
// exists for (see the package doc).
type acAutomaton struct {
	rootNext   [256]int32 // the root's child for each byte, 0 for none
	childStart []int32    // [states+1]
	label      []byte     // [states] the byte leading into the state
	fail       []int32    // [states] the longest proper suffix that is a state
	out        []int32    // [states] the longest pattern ending the state's text (reversed), or -1
	maxLen     int        // the longest pattern's length
}

// newACAutomaton builds the automaton of pats (empty patterns never
// match). Of identical patterns, the first in pats is reported. Patterns
// totalling more than maxAddedBytes are refused.
func newACAutomaton(pats []string) (*acAutomaton, error) {
	total := 0
	for _, p := range pats {
		total += len(p)
	}
	if total > maxAddedBytes {
		return nil, fmt.Errorf("%w: %d tokens to match in text hold %d bytes, more than hsdb matches (%d)", ErrUnsupported, len(pats), total, maxAddedBytes)
	}
	// The reversed patterns, in one buffer (one copy of their bytes).
	buf := make([]byte, 0, total)
	for _, p := range pats {
		for j := len(p) - 1; j >= 0; j-- {
			buf = append(buf, p[j])
		}
	}
	all, rev := string(buf), make([]string, len(pats))
	var order []int32
	a := &acAutomaton{}
	for i, off := 0, 0; i < len(pats); i++ {
		rev[i], off = all[off:off+len(pats[i])], off+len(pats[i])
		if pats[i] != "" {
			order = append(order, int32(i))
			a.maxLen = max(a.maxLen, len(pats[i]))
		}
	}
	sort.SliceStable(order, func(x, y int) bool { return rev[order[x]] < rev[order[y]] })

	// Level by level: a state of depth d is a run of order (all of
	// length >= d) that shares its first d bytes; a pattern of length d
	// sorts first in its run and ends there.
	type run struct{ lo, hi int32 }
	// At most one state per pattern byte, and the root.
	a.label, a.out = make([]byte, 1, total+1), make([]int32, 1, total+1)
	a.out[0] = -1
	a.childStart = make([]int32, 0, total+2)
	level, next := []run{{0, int32(len(order))}}, []run(nil)
	for d, first := 0, int32(0); len(level) > 0; d++ {
		next = next[:0]
		for j, r := range level {
			v := first + int32(j)
			a.childStart = append(a.childStart, int32(len(a.label)))
			lo := r.lo
			for ; lo < r.hi && len(rev[order[lo]]) == d; lo++ {
				if a.out[v] < 0 {
					a.out[v] = order[lo]
				}
			}
			for lo < r.hi {
				c := rev[order[lo]][d]
				hi := lo + 1
				for hi < r.hi && rev[order[hi]][d] == c {
					hi++
				}
				a.label, a.out = append(a.label, c), append(a.out, -1)
				next = append(next, run{lo, hi})
				lo = hi
			}
		}
		first += int32(len(level))
		level, next = next, level
	}
	n := int32(len(a.label))
	a.childStart = append(a.childStart, n)
	for u := a.childStart[0]; u < a.childStart[1]; u++ {
		a.rootNext[a.label[u]] = u
	}

	// Failure links, breadth first: a child u of v by byte c fails to
	// the child by c of the first state on v's failure chain that has one.
	a.fail = make([]int32, n)
	for v := int32(0); v < n; v++ {
		for u := a.childStart[v]; u < a.childStart[v+1]; u++ {
			if v != 0 {
				a.fail[u], _ = a.step(a.fail[v], a.label[u])
			}
			if a.out[u] < 0 {
				a.out[u] = a.out[a.fail[u]]
			}
		}
	}
	return a, nil
}

// child is v's child by byte c, or 0 for none.
func (a *acAutomaton) child(v int32, c byte) int32 {
	if v == 0 {
		return a.rootNext[c]
	}
	lo, hi := a.childStart[v], a.childStart[v+1]
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		if a.label[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < a.childStart[v+1] && a.label[lo] == c {
		return lo
	}
	return 0
}

// step is the state after reading c in state v, and the number of
// transitions looked up (one, plus one per failure link followed).
func (a *acAutomaton) step(v int32, c byte) (int32, int) {
	for n := 1; ; n++ {
		if u := a.child(v, c); u != 0 || v == 0 {
			return u, n
		}
		v = a.fail[v]
	}
}

// longest sets best[i-lo], for each i from lo to hi-1, to the index of
// the longest pattern s[i:] starts with, or -1. It reads s[lo:hi] and at
// most maxLen bytes after it, backwards, and returns the number of
// transitions looked up: at most twice the bytes read, as each failure
// link followed undoes one byte of a state's depth.
func (a *acAutomaton) longest(s string, lo, hi int, best []int32) (steps int) {
	v := int32(0)
	for i := min(len(s), hi+a.maxLen) - 1; i >= lo; i-- {
		var n int
		v, n = a.step(v, s[i])
		steps += n
		if i < hi {
			best[i-lo] = a.out[v]
		}
	}
	return steps
}
