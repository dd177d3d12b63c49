package repl

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// expandListed expands lines of a collapsed name list ("NAME" or
// "PATTERN (N unit)", PATTERN's {a-b,c} runs each standing for its
// numbers) into the names they stand for, failing when a line's count is
// not its expansion's size.
func expandListed(t *testing.T, lines []string, unit string) []string {
	t.Helper()
	count := regexp.MustCompile(`^(\S+) \((\d+) ` + unit + `\)$`)
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		pattern, n := l, 1
		if m := count.FindStringSubmatch(l); m != nil {
			pattern, n = m[1], atoi(t, m[2])
		}
		names := expandRuns(t, pattern)
		if len(names) != n {
			t.Fatalf("line %q stands for %d names, says %d", l, len(names), n)
		}
		out = append(out, names...)
	}
	return out
}

// expandRuns writes out a pattern's {runs}: "a.{0-2,5}.b" is a.0.b, a.1.b,
// a.2.b, a.5.b.
func expandRuns(t *testing.T, p string) []string {
	t.Helper()
	lo := strings.IndexByte(p, '{')
	if lo < 0 {
		return []string{p}
	}
	hi := strings.IndexByte(p[lo:], '}') + lo
	var out []string
	for _, part := range strings.Split(p[lo+1:hi], ",") {
		a, b, isRun := strings.Cut(part, "-")
		first, last := atoi(t, a), atoi(t, a)
		if isRun {
			last = atoi(t, b)
		}
		for i := first; i <= last; i++ {
			for _, rest := range expandRuns(t, p[hi+1:]) {
				out = append(out, p[:lo]+strconv.Itoa(i)+rest)
			}
		}
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	i, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q in a collapsed name is not a number", s)
	}
	return i
}

// TestGroupNames: `info model --quantized` and `--fp8` listed every
// weight, 69,120 lines for Kimi-K2's int4 experts. Expected lines by hand:
// two layers with the same experts (given out of order, as --ep's ranks
// list them) collapse into one line per projection; a layer with other
// experts stays on its own line; a lone numbered name is kept whole; tags
// (formats) never merge; names without numbers pass through in order.
func TestGroupNames(t *testing.T) {
	var names, tags []string
	add := func(tag string, ns ...string) {
		for _, n := range ns {
			names, tags = append(names, n), append(tags, tag)
		}
	}
	add("fp8", "model.layers.0.self_attn.q_b_proj.weight", "model.layers.1.self_attn.q_b_proj.weight")
	for _, l := range []int{1, 2} {
		for _, e := range []int{2, 3, 0, 1} {
			add("int4", "model.layers."+strconv.Itoa(l)+".mlp.experts."+strconv.Itoa(e)+".up_proj.weight")
		}
	}
	add("int4", "model.layers.3.mlp.experts.0.up_proj.weight", "model.layers.3.mlp.experts.2.up_proj.weight")
	add("fp8", "model.layers.4.mlp.experts.7.up_proj.weight", "lm_head.weight")
	add("bf16", "model.layers.2.self_attn.q_b_proj.weight")
	got := groupNames(names, tags)
	want := []nameGroup{
		{"fp8", "model.layers.{0-1}.self_attn.q_b_proj.weight", 2},
		{"int4", "model.layers.{1-2}.mlp.experts.{0-3}.up_proj.weight", 8},
		{"int4", "model.layers.3.mlp.experts.{0,2}.up_proj.weight", 2},
		{"fp8", "model.layers.4.mlp.experts.7.up_proj.weight", 1},
		{"fp8", "lm_head.weight", 1},
		{"bf16", "model.layers.2.self_attn.q_b_proj.weight", 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("groupNames:\n got %v\nwant %v", got, want)
	}
}
