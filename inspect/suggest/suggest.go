// Package suggest finds the names nearest to a mistyped one, for the "did
// you mean" hints of hsdb's messages (an unknown command, subcommand, flag
// or site). It imports nothing of hsdb.
package suggest

import "sort"

// Closest returns the names nearest to want by edit distance (in bytes: a
// dropped, added or changed letter, or two adjacent ones swapped, counts
// 1), when that is at
// most 1 for a word of up to 5 bytes, 2 up to 12, else 3, and less than
// the longer of the two (a one-letter word changed whole, z for the alias
// r, is no typo of it): those at the least distance, at most three, in
// names' order. Letters are compared without case (PRINT: print, at 0).
// None is near: nil. A name whose length differs from
// want's by more than the limit is passed over without its distance, so a
// huge word costs a step per name.
func Closest(want string, names []string) []string {
	limit := 3
	switch {
	case len(want) <= 5:
		limit = 1
	case len(want) <= 12:
		limit = 2
	}
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	lw := asciiLower(want)
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || n == want {
			continue
		}
		seen[n] = true
		if abs(len(want)-len(n)) > limit {
			continue // at least that many letters added or dropped: not near, and not worth len(want)·len(n) steps (a hostile 16 MiB script word)
		}
		if d := distance(lw, asciiLower(n)); d <= limit && d < max(len(want), len(n)) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < 3 && cs[i].d == cs[0].d; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// asciiLower is s with A-Z lowered (bytes kept where they are, so
// distances stay in s's bytes).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func abs(x int) int { return max(x, -x) }

// distance is the optimal string alignment distance between a and b, in
// bytes: Levenshtein's, with two adjacent letters swapped counted 1 (Damerau).
func distance(a, b string) int {
	pp := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				c = min(c, pp[j-2]+1)
			}
			cur[j] = c
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(b)]
}
