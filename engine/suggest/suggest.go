// Package suggest finds the names nearest to a mistyped one, for the "did
// you mean" hints of hsdb's messages: Closest for an unknown command,
// subcommand, flag or site (only names near enough to be a typo), Nearest
// for a tensor a checkpoint lacks (engine/safetensors: the nearest names
// it has, however far). Both measure the one distance (distance: optimal
// string alignment in bytes, letters compared without case). It imports
// only the standard library, and lives under engine so that the loaders
// and the front ends (repl, cmd/hsdb, inspect/debug) share it.
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

// Nearest returns the k names nearest to want by the distance Closest
// measures (in bytes, without case, two adjacent letters swapped counting
// 1), however far: nearest first, names at the same distance in names'
// order; fewer when names has fewer than k. It is for a name that must
// exist (a tensor a checkpoint lacks), where even a far name shows the
// naming the file uses. A name whose length differs from want's by at
// least the k-th distance so far cannot come before it and is passed over
// without its distance.
func Nearest(want string, names []string, k int) []string {
	type cand struct {
		name string
		d    int
	}
	best := make([]cand, 0, k) // sorted by d, then by names' order
	lw := asciiLower(want)
	for _, n := range names {
		if len(best) == k && (k == 0 || abs(len(want)-len(n)) >= best[k-1].d) {
			continue
		}
		d := distance(lw, asciiLower(n))
		if len(best) == k && d >= best[k-1].d {
			continue
		}
		i := sort.Search(len(best), func(i int) bool { return best[i].d > d })
		if len(best) < k {
			best = append(best, cand{})
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = cand{n, d}
	}
	out := make([]string, len(best))
	for i, c := range best {
		out[i] = c.name
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
