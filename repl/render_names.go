package repl

import (
	"regexp"
	"slices"
	"strconv"

	"hsdb/inspect/client"
)

// nameGroup is one line of a collapsed list of tensor names: pattern, a
// name with its routed-expert and decoder-layer numbers written as runs
// ("model.layers.{1-60}.mlp.experts.{0-383}.gate_proj.weight"), standing
// for n names, all of one tag (a quantized format, or "").
type nameGroup struct {
	tag, pattern string
	n            int
}

// The numbered path components collapsed, innermost first: a routed
// expert's index (vLLM's and HF's experts.E), then a decoder layer's
// (model.layers.L, with Kimi-K2.5's language_model. prefix too).
var (
	expertIndex = regexp.MustCompile(`^(.*\.experts\.)(\d+)(\..+)$`)
	layerIndex  = regexp.MustCompile(`^(.*\blayers\.)(\d+)(\..+)$`)
)

// groupNames collapses names (each with its tag, tags[i] for names[i]; nil
// for none) as `tree` collapses routed experts: names equal but for an
// expert's index become one line with the indices as runs, then lines
// equal but for a decoder layer's index (the same experts in each) one
// line: Kimi-K2's 69,120 int4 expert weights are 3 lines, DeepSeek-V3's
// 61 layers' q_b_proj one. Lines keep the order of their first name.
func groupNames(names, tags []string) []nameGroup {
	gs := make([]nameGroup, len(names))
	for i, n := range names {
		gs[i] = nameGroup{pattern: n, n: 1}
		if tags != nil {
			gs[i].tag = tags[i]
		}
	}
	return collapseIndex(collapseIndex(gs, expertIndex), layerIndex)
}

// collapseIndex merges the groups that re matches with the same tag,
// prefix (re's group 1) and suffix (group 3), writing the numbers (group 2)
// as client.IntRuns; a number seen alone stays as it was.
func collapseIndex(gs []nameGroup, re *regexp.Regexp) []nameGroup {
	type acc struct {
		at            int
		tag, pre, suf string
		literal       string
		idx           []int
		n             int
	}
	var out []nameGroup
	var accs []*acc
	byKey := map[string]*acc{}
	for _, g := range gs {
		m := re.FindStringSubmatch(g.pattern)
		var i int
		if m != nil {
			var err error
			if i, err = strconv.Atoi(m[2]); err != nil || strconv.Itoa(i) != m[2] {
				m = nil // a leading zero or out of range: kept as written
			}
		}
		if m == nil {
			out = append(out, g)
			continue
		}
		key := g.tag + "\x00" + m[1] + "\x00" + m[3]
		a := byKey[key]
		if a == nil {
			a = &acc{at: len(out), tag: g.tag, pre: m[1], suf: m[3], literal: g.pattern}
			byKey[key] = a
			accs = append(accs, a)
			out = append(out, nameGroup{}) // its place, filled below
		}
		a.idx = append(a.idx, i)
		a.n += g.n
	}
	for _, a := range accs {
		p := a.literal
		if len(a.idx) > 1 {
			slices.Sort(a.idx)
			p = a.pre + "{" + client.IntRuns(slices.Compact(a.idx)) + "}" + a.suf
		}
		out[a.at] = nameGroup{tag: a.tag, pattern: p, n: a.n}
	}
	return out
}
