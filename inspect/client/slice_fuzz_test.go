package client

import (
	"strings"
	"testing"
)

// FuzzSliceText: the texts the debugger's commands parse before any model
// is asked (seeds: the README's forms): a value index (`print
// hidden_states[0:3, -1]`, `set var stream[2, :8] = 0`) resolved against a
// [rows, cols] tensor of the fuzzed size, a --tokens range, a --layers list
// and an --ids list. Each either fails with a message or gives what its
// callers rely on: an index resolves to a non-empty [Lo, Hi) within
// [0, size) and, for a single position, to Python's a[i] (i, or i + size
// when negative); a range is one row or Lo < Hi or open (Hi -1); layers
// are distinct and below MaxLayer. No model is loaded: an execution is
// microseconds.
func FuzzSliceText(f *testing.F) {
	for _, s := range []string{"0:3, -1", "3, :8", "-1", ":", "0:2", "-3:, 1:-1", "1:4", "2", ":5", "2-4,7", "1, 17,250", "[1, 17, 250]"} {
		f.Add(s, uint16(10), uint16(64))
	}
	f.Fuzz(func(t *testing.T, s string, rows, cols uint16) {
		if len(s) > 256 {
			return
		}
		if idx, err := ParseIndex(s); err == nil {
			checkSpec(t, s, idx.Rows, int(rows), "row")
			if idx.Cols != (IndexSpec{}) {
				checkSpec(t, s, idx.Cols, int(cols), "column")
			}
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Fatal("an index error without a message")
		}
		if r, err := ParseRange(s); err == nil {
			if r.Lo < 0 || (r.Hi != -1 && r.Hi <= r.Lo) {
				t.Fatalf("ParseRange(%q) = %+v: not one row, Lo < Hi or an open end", s, r)
			}
		}
		if ls, err := ParseLayers(s); err == nil {
			seen := map[int]bool{}
			for _, l := range ls {
				if l < 0 || l >= MaxLayer || seen[l] {
					t.Fatalf("ParseLayers(%q) = %v: layer %d", s, ls, l)
				}
				seen[l] = true
			}
		}
		ParseIDs(s)
	})
}

// checkSpec resolves sp against a dimension of size n and checks the
// result against Python's indexing, worked out here without Resolve.
func checkSpec(t *testing.T, s string, sp IndexSpec, n int, dim string) {
	t.Helper()
	r, err := sp.Resolve(n, dim)
	if err != nil {
		if !strings.Contains(err.Error(), dim) {
			t.Fatalf("[%s] on %d: the error does not name the %s: %v", s, n, dim, err)
		}
		return
	}
	if r.Lo < 0 || r.Hi > n || r.Lo >= r.Hi {
		t.Fatalf("[%s] on %d: %s range %+v outside [0, %d) or empty", s, n, dim, r, n)
	}
	if sp.Single {
		want := sp.Lo
		if want < 0 {
			want += n
		}
		if r.Lo != want || r.Hi != want+1 {
			t.Fatalf("[%s] on %d: %s %d resolved to %+v, want [%d, %d)", s, n, dim, sp.Lo, r, want, want+1)
		}
	}
}
