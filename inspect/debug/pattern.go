package debug

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/suggest"
	"hsdb/inspect/client"
)

// Pattern selects sites by path. It is a dot-separated path whose
// components may be `*` (any one component) or a range `a-b` of integers
// (inclusive): "layers.*.mlp", "layers.2-5", "lm_head",
// "model.layers.3.self_attn.o_proj". The "model." prefix may be left out, as
// everywhere in hsdb. A pattern matches a path with the same number of
// components only: "layers.3" is the decoder layer's output site, not its
// sub-modules.
type Pattern struct {
	Src   string
	comps []comp
}

type comp struct {
	lit    string
	star   bool
	lo, hi int
	rng    bool
}

// ParsePattern parses a site pattern; errors name the bad component.
func ParsePattern(src string) (*Pattern, error) {
	if src == "" {
		return nil, fmt.Errorf("empty site pattern")
	}
	p := &Pattern{Src: src}
	for i, c := range strings.Split(src, ".") {
		switch {
		case c == "":
			return nil, fmt.Errorf("site %q: empty component %d", src, i+1)
		case c == "*":
			p.comps = append(p.comps, comp{star: true})
		case strings.Contains(c, "-"):
			a, b, _ := strings.Cut(c, "-")
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			for _, e := range []error{err1, err2} {
				if ne, ok := e.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && !strings.HasPrefix(ne.Num, "-") {
					return nil, fmt.Errorf("site %q: range %q: %s is too large (at most %d)", src, c, ne.Num, math.MaxInt)
				}
			}
			if err1 != nil || err2 != nil || lo < 0 || hi < lo {
				return nil, fmt.Errorf("site %q: range %q: want a-b with 0 <= a <= b", src, c)
			}
			p.comps = append(p.comps, comp{rng: true, lo: lo, hi: hi})
		default:
			for _, r := range c {
				if !isLetterR(r) && !isDigitR(r) {
					return nil, fmt.Errorf("site %q: unexpected %q in component %q (site paths are ASCII: letters, digits, _)", src, r, c)
				}
			}
			p.comps = append(p.comps, comp{lit: c})
		}
	}
	return p, nil
}

// Match reports whether path (a full site path) matches.
func (p *Pattern) Match(path string) bool {
	parts := strings.Split(path, ".")
	if p.matchParts(parts) {
		return true
	}
	return len(parts) > 1 && parts[0] == "model" && p.matchParts(parts[1:])
}

func (p *Pattern) matchParts(parts []string) bool {
	if len(parts) != len(p.comps) {
		return false
	}
	for i, c := range p.comps {
		switch {
		case c.star:
		case c.rng:
			n, err := strconv.Atoi(parts[i])
			if err != nil || n < c.lo || n > c.hi {
				return false
			}
		case c.lit != parts[i]:
			return false
		}
	}
	return true
}

// Sites returns the sites of t that p matches, in visit order; none is an
// error wrapping ErrNoSite that says what the model has.
func (p *Pattern) Sites(t *model.Tree) ([]*model.Site, error) {
	var out []*model.Site
	for _, s := range t.Sites {
		if p.Match(s.Path) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		hint := p.fusedHint(t) + p.layerHint(t)
		if hint == "" {
			hint = p.typoHint(t)
		}
		if hint == "" {
			hint = p.layerlessHint(t)
		}
		return nil, fmt.Errorf("%w: %q matches no site of this model (%s; `info sites` lists them)%s", client.ErrNoSite, p.Src, siteHint(t), hint)
	}
	return out, nil
}

// typoHint names the sites nearest to a pattern without wildcards that
// matches none (layers.1.self_atn: "; did you mean layers.1.self_attn?"),
// written as the pattern was (with or without "model."), among the sites of
// the layer it names (another layer's is no suggestion: siteHint gives the
// layers); "" when none is near (suggest.Closest).
func (p *Pattern) typoHint(t *model.Tree) string {
	if strings.ContainsAny(p.Src, "*{}") {
		return ""
	}
	if _, hf := hfFused[p.comps[len(p.comps)-1].lit]; hf {
		return "" // an HF module this model does not have (q_proj of MLA), no typo
	}
	layer := -1
	if m := layerNumber.FindStringSubmatch(p.Src); m != nil {
		layer, _ = strconv.Atoi(m[1])
	} else if m := numberComp.FindStringSubmatch(p.Src); m != nil {
		layer, _ = strconv.Atoi(m[1]) // layer.1, layrs.1: "layers" mistyped before the number
	}
	short := !strings.HasPrefix(p.Src, "model.")
	var names []string
	for _, s := range t.Sites {
		if s.Layer != layer {
			continue
		}
		n := s.Path
		if short {
			n = strings.TrimPrefix(n, "model.")
		}
		names = append(names, n)
	}
	c := suggest.Closest(p.Src, names)
	if len(c) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(c, " or ") + "?"
}

// layerlessHint answers a path written without its decoder layer
// (mlp.gate, self_attn) that is a site of decoder layers: "; a decoder
// layer's site: layers.N.mlp.gate, N in 1-3 (break layers.*.mlp.gate
// stops at every one)"; "" when it is not, or the path has wildcards or a
// layer.
func (p *Pattern) layerlessHint(t *model.Tree) string {
	src := strings.TrimPrefix(p.Src, "model.")
	if strings.ContainsAny(src, "*{}") || strings.HasPrefix(src, "layers") || numberComp.MatchString(src) {
		return ""
	}
	var in []string
	for _, s := range t.Sites {
		if s.Layer >= 0 && s.Path == fmt.Sprintf("model.layers.%d.%s", s.Layer, src) {
			in = append(in, strconv.Itoa(s.Layer))
		}
	}
	if len(in) == 0 {
		return ""
	}
	which := strings.Join(in, ",")
	if first, _ := strconv.Atoi(in[0]); len(in) > 2 && in[len(in)-1] == strconv.Itoa(first+len(in)-1) {
		which = in[0] + "-" + in[len(in)-1]
	}
	return fmt.Sprintf("; a decoder layer's site: layers.N.%s, N in %s (break layers.*.%s stops at every one)", src, which, src)
}

// layerNumber finds the decoder layer a site path names (layers.12.mlp).
var layerNumber = regexp.MustCompile(`(?:^|\.)layers\.(\d+)(?:\.|$)`)

// numberComp finds a number path component (layrs.1.mlp, layer.1): the
// decoder layer of a path whose "layers" is mistyped.
var numberComp = regexp.MustCompile(`(?:^|\.)(\d+)(?:\.|$)`)

// hfFused are HF checkpoint modules that vLLM fuses into one linear, whose
// site then stands for them: the fused module's name and the tensor of its
// site that holds the HF module's output (vLLM's QKVParallelLinear,
// MergedColumnParallelLinear gate_up_proj, DeepSeek's fused_qkv_a_proj).
var hfFused = map[string][2]string{
	"q_proj": {"qkv_proj", "q"}, "k_proj": {"qkv_proj", "k"}, "v_proj": {"qkv_proj", "v"},
	"gate_proj": {"gate_up_proj", "gate"}, "up_proj": {"gate_up_proj", "up"},
	"q_a_proj": {"fused_qkv_a_proj", "q_c"}, "kv_a_proj_with_mqa": {"fused_qkv_a_proj", "kv_c and k_pe"},
}

// fusedHint says, for a pattern ending in an HF module that this model
// fuses (layers.0.self_attn.q_proj), which site to use instead; "" when
// that does not match either.
func (p *Pattern) fusedHint(t *model.Tree) string {
	last := p.comps[len(p.comps)-1]
	hf := last.lit
	f, ok := hfFused[hf]
	if !ok && strings.HasSuffix(hf, "_proj") { // kv_a_proj for HF's kv_a_proj_with_mqa
		for k, v := range hfFused {
			if strings.HasPrefix(k, hf+"_") {
				hf, f, ok = k, v, true
			}
		}
	}
	if !ok {
		return ""
	}
	i := strings.LastIndex(p.Src, ".")
	src := f[0]
	if i >= 0 {
		src = p.Src[:i+1] + f[0]
	}
	q, err := ParsePattern(src)
	if err != nil {
		return ""
	}
	for _, st := range t.Sites {
		if q.Match(st.Path) {
			return fmt.Sprintf("; HF's %s is fused into vLLM's %s here: %s (tensor %s)", hf, f[0], src, f[1])
		}
	}
	return ""
}

// layerHint says, for a pattern naming a sub-module of one decoder layer
// that this layer lacks but others have (layers.0.mlp.gate in DeepSeek-V3,
// whose first first_k_dense_replace layers are dense), which layers have
// it and what the layer's mlp is instead; "" otherwise.
func (p *Pattern) layerHint(t *model.Tree) string {
	c := p.comps
	if len(c) > 0 && c[0].lit == "model" {
		c = c[1:]
	}
	if len(c) < 3 || c[0].lit != "layers" || c[1].lit == "" {
		return ""
	}
	n, err := strconv.Atoi(c[1].lit)
	if err != nil || strconv.Itoa(n) != c[1].lit {
		return "" // layers.01 names no layer: typoHint's (layers.1)
	}
	parts := strings.Split(p.Src, ".") // one per component (ParsePattern); c is their tail
	rest := strings.Join(parts[len(parts)-len(c)+2:], ".")
	q, err := ParsePattern("layers.*." + rest)
	if err != nil {
		return ""
	}
	var have []int
	loaded := false // layer n is in the model (a missing layer is siteHint's)
	for _, s := range t.Sites {
		loaded = loaded || s.Layer == n
		if q.Match(s.Path) && (len(have) == 0 || have[len(have)-1] != s.Layer) {
			have = append(have, s.Layer)
		}
	}
	if len(have) == 0 || !loaded {
		return ""
	}
	which := "layers " + firstInts(have) + " have one"
	if k := len(have); k == 1 {
		which = fmt.Sprintf("layer %d has one", have[0])
	} else if have[k-1]-have[0] == k-1 {
		which = fmt.Sprintf("layers %d-%d have one", have[0], have[k-1])
	}
	h := fmt.Sprintf("; layer %d has no %s, %s", n, rest, which)
	if mlp := t.Site(fmt.Sprintf("model.layers.%d.mlp", n)); mlp != nil && strings.HasPrefix(rest, "mlp.") && !strings.Contains(mlp.Class, "MoE") {
		h += fmt.Sprintf(" (layer %d's mlp is a dense %s, no MoE)", n, mlp.Class)
	}
	return h
}

// siteHint summarises a tree's sites for error messages: the numbers of
// its decoder layers (a tree loaded with --load-layers 2-3 has layers 2-3).
func siteHint(t *model.Tree) string {
	lo, hi := -1, -1
	for _, s := range t.Sites {
		if s.Layer >= 0 && s.Depth == 2 {
			if lo < 0 || s.Layer < lo {
				lo = s.Layer
			}
			hi = max(hi, s.Layer)
		}
	}
	if lo < 0 {
		return "no decoder layers"
	}
	return fmt.Sprintf("layers %d-%d", lo, hi)
}

// ResolveSite returns the one site at path ("model." may be omitted; a
// pattern must match exactly one site).
func ResolveSite(t *model.Tree, path string) (*model.Site, error) {
	if s := t.Site(path); s != nil {
		return s, nil
	}
	p, err := ParsePattern(path)
	if err != nil {
		return nil, err
	}
	sites, err := p.Sites(t)
	if err != nil {
		return nil, err
	}
	if len(sites) > 1 {
		var names []string // all of them up to three, else the first two and "..."
		for i, st := range sites {
			if len(sites) > 3 && i == 2 {
				names = append(names, "...")
				break
			}
			names = append(names, st.Path)
		}
		return nil, fmt.Errorf("site %q matches %d sites (%s): name one", path, len(sites), strings.Join(names, ", "))
	}
	return sites[0], nil
}
