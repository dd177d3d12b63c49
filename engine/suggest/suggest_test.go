package suggest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestClosest: distances counted by hand (prnt→print: one letter added;
// brek→break: one; chek→check: one; dif→diff: one; layers.1.self_atn →
// layers.1.self_attn: one, layers.2.self_attn two, so only the first); a
// name farther than the limit for the typed length is not offered.
func TestClosest(t *testing.T) {
	cmds := []string{"model", "print", "break", "run", "continue", "check", "info", "hist", "dump", "diff"}
	for _, c := range []struct {
		want string
		got  []string
	}{
		{"prnt", []string{"print"}},
		{"brek", []string{"break"}},
		{"chek", []string{"check"}},
		{"dif", []string{"diff"}},
		{"zzzz", nil},
		{"print", nil}, // the name itself is no suggestion
		{"model.layers.1.self_atn", nil},
		{"hsit", []string{"hist"}}, // two letters swapped: 1
		{"cnotinue", []string{"continue"}},
		{"modle", []string{"model"}},
	} {
		if got := Closest(c.want, cmds); !reflect.DeepEqual(got, c.got) {
			t.Errorf("Closest(%q) = %q; want %q", c.want, got, c.got)
		}
	}
	sites := []string{"model.layers.1.self_attn", "model.layers.1.mlp", "model.layers.1.mlp.gate", "model.layers.2.self_attn"}
	if got := Closest("model.layers.1.self_atn", sites); !reflect.DeepEqual(got, []string{"model.layers.1.self_attn"}) {
		t.Errorf("site typo: %q", got)
	}
}

// TestClosestOneLetter: a one-letter word is distance 1 from every other
// one-letter name (one letter changed), so an unknown REPL command z was
// answered "did you mean r or c or s?" (run, continue, step), three
// aliases sharing nothing with it. A name that keeps a letter of the
// word is still offered (pp: p, one letter dropped; x: xb, one added).
func TestClosestOneLetter(t *testing.T) {
	names := []string{"r", "c", "s", "p", "xb"}
	for _, c := range []struct {
		want string
		got  []string
	}{
		{"z", nil},
		{"k", nil},
		{"pp", []string{"p"}},
		{"x", []string{"xb"}},
	} {
		if got := Closest(c.want, names); !reflect.DeepEqual(got, c.got) {
			t.Errorf("Closest(%q) = %q; want %q", c.want, got, c.got)
		}
	}
}

// TestClosestHugeWordIsBounded: a word far longer than every name (a
// 16 MiB line of a script, an unknown flag of a megabyte) is near none of
// them, since at least the difference in length must be added or dropped;
// its distance to each name (a table row per name, len(want)·len(name)
// steps) must not be computed. Counted in allocations, which distance
// makes per name: none.
func TestClosestHugeWordIsBounded(t *testing.T) {
	want := strings.Repeat("a", 1<<16)
	names := make([]string, 200)
	for i := range names {
		names[i] = fmt.Sprintf("model.layers.%d.self_attn", i)
	}
	var got []string
	allocs := testing.AllocsPerRun(2, func() { got = Closest(want, names) })
	if got != nil {
		t.Errorf("Closest(64 KiB word) = %q; want nil", got)
	}
	// the map of names seen grows with len(names); distance would add 3 a name
	if allocs >= float64(len(names)) {
		t.Errorf("Closest(64 KiB word, %d names): %v allocations; want fewer than one a name (no distance computed)", len(names), allocs)
	}
}

// TestClosestCase: a word typed with caps lock on (PRINT, Prnt, LM_HEAD)
// was five letters from print, so no name was offered; case is no typo
// distance: PRINT is print at 0, Prnt print at 1 (a letter dropped),
// LM_HEAD lm_head. The name itself, same case, is still no suggestion.
func TestClosestCase(t *testing.T) {
	names := []string{"print", "break", "lm_head", "model.norm"}
	for _, c := range []struct {
		want string
		got  []string
	}{
		{"PRINT", []string{"print"}},
		{"Prnt", []string{"print"}},
		{"LM_HEAD", []string{"lm_head"}},
		{"print", nil},
		{"ZZZZZ", nil},
	} {
		if got := Closest(c.want, names); !reflect.DeepEqual(got, c.got) {
			t.Errorf("Closest(%q) = %q; want %q", c.want, got, c.got)
		}
	}
}

// TestNearest: the k nearest names however far, nearest first, ties in
// names' order, by Closest's distance (counted by hand: abc→b 2 letters
// dropped, abc→xyz 3 changed; ab→ax, xb, ab2 1 each; abc→abcdefgh 5
// added, ab 1 dropped, abc2 1 added).
func TestNearest(t *testing.T) {
	for _, c := range []struct {
		want  string
		names []string
		k     int
		got   []string
	}{
		{"abc", []string{"xyz", "b"}, 3, []string{"b", "xyz"}}, // Closest offers neither: too far for a typo
		{"abc", []string{"b"}, 3, []string{"b"}},
		{"abc", []string{"b"}, 0, []string{}},
		{"ab", []string{"ax", "xb", "ab2"}, 2, []string{"ax", "xb"}},
		{"abc", []string{"abcdefgh", "ab", "abc2"}, 1, []string{"ab"}},
	} {
		if got := Nearest(c.want, c.names, c.k); !reflect.DeepEqual(got, c.got) {
			t.Errorf("Nearest(%q, %q, %d) = %q; want %q", c.want, c.names, c.k, got, c.got)
		}
	}
}

// TestNearestSharesClosestDistance: engine/safetensors ranked a missing
// tensor's nearest names by its own Levenshtein distance, case counted,
// where Closest counts two swapped letters 1 and case 0; Nearest, which
// it now calls, measures as Closest does. a.wieght is a.weight with two
// letters swapped (1; Levenshtein 2) and a.wieghtxy with two added (2):
// the earlier ranking tied them and kept a.wieghtxy first. LM_HEAD.weight
// is lm_head.weight but for case (0; 7 with case) and LM_HEAD.weigh with
// a letter dropped (1).
func TestNearestSharesClosestDistance(t *testing.T) {
	if got := Nearest("a.wieght", []string{"a.wieghtxy", "a.weight"}, 2); !reflect.DeepEqual(got, []string{"a.weight", "a.wieghtxy"}) {
		t.Errorf("swapped letters: %q", got)
	}
	if got := Nearest("LM_HEAD.weight", []string{"LM_HEAD.weigh", "lm_head.weight"}, 1); !reflect.DeepEqual(got, []string{"lm_head.weight"}) {
		t.Errorf("case: %q", got)
	}
}
