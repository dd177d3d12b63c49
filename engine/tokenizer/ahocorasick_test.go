package tokenizer

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// bruteLongestAt is the reference: the index of the longest pattern s[i:]
// starts with (the first of identical ones), or -1, by comparing every
// pattern.
func bruteLongestAt(pats []string, s string, i int) int32 {
	best := int32(-1)
	for k, p := range pats {
		if p != "" && strings.HasPrefix(s[i:], p) && (best < 0 || len(p) > len(pats[best])) {
			best = int32(k)
		}
	}
	return best
}

// bruteSegments is the reference leftmost-longest split: from the left,
// the first position where some pattern starts takes its longest
// pattern, and the search goes on after it.
func bruteSegments(pats []string, s string) []segment {
	var segs []segment
	last := 0
	for pos := 0; pos < len(s); {
		k := bruteLongestAt(pats, s, pos)
		if k < 0 {
			pos++
			continue
		}
		if last < pos {
			segs = append(segs, segment{s[last:pos], -1, nil})
		}
		segs = append(segs, segment{pats[k], k, nil})
		pos += len(pats[k])
		last = pos
	}
	if last < len(s) || s == "" {
		segs = append(segs, segment{s[last:], -1, nil})
	}
	return segs
}

// randomPatterns returns n patterns over alphabet, many of them prefixes,
// suffixes, repeats or duplicates of earlier ones.
func randomPatterns(r *rand.Rand, n, maxLen int, alphabet string) []string {
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.Intn(len(alphabet))]
		}
		return string(b)
	}
	var pats []string
	for len(pats) < n {
		if len(pats) == 0 || r.Intn(3) == 0 {
			pats = append(pats, word(1+r.Intn(maxLen)))
			continue
		}
		p := pats[r.Intn(len(pats))]
		switch r.Intn(5) {
		case 0:
			pats = append(pats, p[:1+r.Intn(len(p))]) // a prefix
		case 1:
			pats = append(pats, p[r.Intn(len(p)):]) // a suffix
		case 2:
			pats = append(pats, p+word(1+r.Intn(3))) // an extension
		case 3:
			pats = append(pats, p+p) // overlapping with itself
		default:
			pats = append(pats, p) // a duplicate
		}
	}
	return pats
}

// randomText is n bytes of alphabet with pieces of the patterns in it.
func randomText(r *rand.Rand, n int, pats []string, alphabet string) string {
	var b strings.Builder
	for b.Len() < n {
		if p := pats[r.Intn(len(pats))]; p != "" && r.Intn(2) == 0 {
			b.WriteString(p[:1+r.Intn(len(p))])
		} else {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
	}
	return b.String()
}

func plainMatcher(t *testing.T, pats []string) *addedMatcher {
	t.Helper()
	toks := make([]*hfAddedToken, len(pats))
	for i, p := range pats {
		toks[i] = &hfAddedToken{ID: int32(i), Content: p}
	}
	m, err := newAddedMatcher(pats, toks)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collectSegments(m *addedMatcher, s string) []segment {
	var got []segment
	for seg := range m.segments(s) {
		got = append(got, seg)
	}
	return got
}

// TestAddedMatcherDifferential compares the automaton with the brute-force
// reference on random pattern sets over small alphabets (patterns that
// are prefixes, suffixes, duplicates and self-overlaps of each other):
// the longest pattern at every position, for random windows [lo, hi)
// (acAutomaton.longest, whose window reads past hi), and the whole
// leftmost-longest split (addedMatcher.segments).
func TestAddedMatcherDifferential(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < 3000; iter++ {
		alphabet := "ab"
		if iter%3 == 1 {
			alphabet = "abc"
		} else if iter%3 == 2 {
			alphabet = "ab\xc3\xa9" // é's two bytes as well
		}
		pats := randomPatterns(r, 1+r.Intn(8), 1+r.Intn(6), alphabet)
		if iter%50 == 0 {
			pats = append(pats, "") // never matches
		}
		m := plainMatcher(t, pats)
		s := randomText(r, r.Intn(60), pats, alphabet)
		want := bruteSegments(pats, s)
		if got := collectSegments(m, s); !slices.Equal(got, want) {
			t.Fatalf("patterns %q, text %q:\n got %v\nwant %v", pats, s, got, want)
		}
		if s == "" {
			continue
		}
		lo := r.Intn(len(s))
		hi := lo + 1 + r.Intn(len(s)-lo)
		best := make([]int32, hi-lo)
		m.ac.longest(s, lo, hi, best)
		for i := lo; i < hi; i++ {
			if want := bruteLongestAt(pats, s, i); best[i-lo] != want {
				t.Fatalf("patterns %q, text %q, window [%d,%d): longest at %d is %d, want %d", pats, s, lo, hi, i, best[i-lo], want)
			}
		}
	}
}

// TestAddedMatcherChunks: texts longer than one chunk (minChunk), with
// matches across chunk ends, and a pattern longer than minChunk (the
// chunk then spans it), split as the reference splits them.
func TestAddedMatcherChunks(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	long := strings.Repeat("ab", minChunk/2+500) + "c" // 66,537 bytes
	for _, pats := range [][]string{
		{"ab", "aba", "bab", "babb", "bb", "c"},
		{long, "ab", long[:minChunk], "ba", "abc"},
	} {
		m := plainMatcher(t, pats)
		for _, s := range []string{
			randomText(r, 3*minChunk+17, pats, "abc"),
			strings.Repeat(long, 3) + long[:1000],
			strings.Repeat("ab", 2*minChunk) + "c",
		} {
			want := bruteSegments(pats, s)
			if got := collectSegments(m, s); !slices.Equal(got, want) {
				t.Errorf("patterns of %d bytes, text of %d bytes: %d segments, want %d (first difference at %d)", len(strings.Join(pats, "")), len(s), len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []segment) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// hostileHF writes a tokenizer.json (bosHF's model) whose added tokens are
// n tokens of size bytes, the same prefix and a distinct three-digit end.
func hostileHF(t *testing.T, n, size int) (path, prefix string) {
	t.Helper()
	prefix = strings.Repeat("hi", size/2)[:size-3]
	var b strings.Builder
	b.WriteString(`{"added_tokens": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id": %d, "content": "%s%03d", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}`, 5+i, prefix, i)
	}
	b.WriteString(`],` + bosHF[strings.Index(bosHF, `"normalizer"`):])
	path = filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, []byte(strings.Replace(b.String(), "POST", "null", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, prefix
}

// TestAddedTokensHostileLinear: 254 added tokens of 20 KB sharing their
// first 19,997 bytes, over 1 M characters of that prefix repeated. The
// matcher before compared, at each position where the prefix's first
// byte stood, every token starting with that byte longest first: up to
// 254 comparisons of 20 KB at each of half a million positions (25 s for
// this tokenizer and text, 4 minutes for tokens and text of one repeated
// letter; no test could take that). The
// automaton's transitions are counted, not timed: at most four per text
// byte (addedMatcher.each), whatever the tokens; and it holds at most one
// state per token byte, in at most 32 bytes of allocation per token byte.
func TestAddedTokensHostileLinear(t *testing.T) {
	path, prefix := hostileHF(t, 254, 20_000)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	tk, err := LoadHF(path)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	const patBytes = 254 * 20_000
	if n := len(tk.rawAdded.ac.label); n > patBytes+1 {
		t.Errorf("%d automaton states for %d bytes of added tokens; want at most %d", n, patBytes, patBytes+1)
	}
	// LoadHF reads the 5 MB file and decodes its tokens (about 3 copies
	// of the bytes) besides the automaton.
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 32*patBytes {
		t.Errorf("LoadHF allocated %d bytes for %d bytes of added tokens; want at most %d", got, patBytes, 32*patBytes)
	}

	text := strings.Repeat(prefix, 1_000_000/len(prefix)+1)[:1_000_000]
	for _, c := range []struct {
		name, text string
		want       []segment
	}{
		{"the prefix repeated", text, []segment{{text, -1, nil}}},
		{"the prefix repeated, then token 17", text + prefix + "017hi", []segment{{text, -1, nil}, {prefix + "017", 22, nil}, {"hi", -1, nil}}},
	} {
		var got []segment
		steps := tk.rawAdded.each(c.text, func(s segment) bool { got = append(got, s); return true })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %d segments (first of %d bytes), want %d", c.name, len(got), len(got[0].text), len(c.want))
		}
		if steps > 4*len(c.text) {
			t.Errorf("%s: %d automaton transitions for %d bytes of text; want at most %d", c.name, steps, len(c.text), 4*len(c.text))
		}
	}
	// Through Encode: the text's 1 M characters need more than 4096 ids.
	if _, err := EncodeAtMost(tk, text, 4096); !errors.Is(err, ErrTooManyTokens) {
		t.Errorf("EncodeAtMost(1 M characters, 4096): %v; want ErrTooManyTokens", err)
	}
	ids, err := tk.Encode(prefix[:4] + prefix + "253" + "hi")
	if want := []int32{2, 2, 5 + 253, 2}; err != nil || !slices.Equal(ids, want) {
		t.Errorf("Encode(hihi, token 253, hi): %v, %v; want %v", ids, err, want)
	}
}

// TestAddedTokensTooManyBytes: added tokens holding more than
// maxAddedBytes (here 17 of 1 MiB) are refused before the automaton is
// built, naming added_tokens and the limit; before, nothing bounded them
// but MaxFileBytes (512 MB), for which the automaton would take 8 GB.
func TestAddedTokensTooManyBytes(t *testing.T) {
	path, _ := hostileHF(t, 17, 1<<20)
	_, err := LoadHF(path)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "added_tokens") || !strings.Contains(err.Error(), fmt.Sprint(maxAddedBytes)) {
		t.Errorf("17 added tokens of 1 MiB: %v; want ErrUnsupported naming added_tokens and %d", err, maxAddedBytes)
	}
	// Exactly maxAddedBytes fit (16 identical tokens of 1 MiB: one
	// chain of states); one byte more does not.
	pats := slices.Repeat([]string{strings.Repeat("x", 1<<20)}, 16)
	if _, err := newAddedMatcher(pats, make([]*hfAddedToken, 16)); err != nil {
		t.Errorf("16 tokens of 1 MiB: %v", err)
	}
	if _, err := newAddedMatcher(append(pats, "y"), make([]*hfAddedToken, 17)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("16 tokens of 1 MiB and one of a byte: %v; want ErrUnsupported", err)
	}
}
