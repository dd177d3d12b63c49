package quant

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"hsdb/engine/model"
)

// Which config group quantizes a module: compressed-tensors' targets and
// ignore entries (utils/match.py) matched against HF module names.

// matcher is one target or ignore entry: "re:<pattern>" matches a module
// name when the pattern matches at its start (Python's re.match, as
// compressed-tensors' _match_name does), any other string matches the name
// exactly or, for "Linear", every linear module (compressed-tensors'
// _match_class on torch.nn.Linear; see isLinear).
type matcher struct {
	raw string
	re  *regexp.Regexp
}

// Bounds on the "re:" entries of targets and ignore. Each pattern is tried
// against every linear module (Kimi-K2: 61 layers × 384 experts × 3, about
// 7·10^4 modules; one match of a ".*" pattern costs about a microsecond), so
// a config with thousands of them made `hsdb plan` and the load run for
// minutes (1000 took 66 s); released configs have a handful (Kimi-K2's
// has 3) and list exact module names, which cost nothing, for the rest.
const (
	maxPatterns     = 128
	maxPatternBytes = 4096
)

func newMatcher(field, s string) (matcher, error) {
	p, ok := strings.CutPrefix(s, "re:")
	if !ok {
		return matcher{raw: s}, nil
	}
	if len(p) > maxPatternBytes {
		return matcher{}, fmt.Errorf("quantization_config: %s %.40q...: a pattern of %d bytes, more than the %d hsdb compiles", field, s, len(p), maxPatternBytes)
	}
	re, err := regexp.Compile("^(?:" + p + ")")
	if err != nil {
		return matcher{}, fmt.Errorf("quantization_config: %s %q: %w (hsdb compiles it with Go's RE2 syntax)", field, s, err)
	}
	return matcher{raw: s, re: re}, nil
}

func (m matcher) match(module string) bool {
	if m.re != nil {
		return m.re.MatchString(module)
	}
	return m.raw == module || (m.raw == "Linear" && isLinear(module))
}

// isLinear reports whether module is an nn.Linear in HF's DeepSeek-V3 /
// Kimi-K2 model, which a class target "Linear" selects: not the embedding,
// not an RMSNorm, not the MoE router mlp.gate (DeepseekV3TopkRouter holds
// its weight as a bare parameter). Plan-time byte counts (Planned) ask
// about every weight; the loader asks only about linear ones.
func isLinear(module string) bool {
	return !strings.HasSuffix(module, "embed_tokens") && !strings.HasSuffix(module, "norm") && !strings.HasSuffix(module, ".gate")
}

// matchSet is a list of target or ignore entries: the exact module names
// in a set (a config may list thousands: each module is one lookup, not a
// pass over the list), the patterns and class targets in order.
type matchSet struct {
	exact map[string]bool
	rest  []matcher
}

func (s *matchSet) add(m matcher) {
	if m.re == nil && m.raw != "Linear" {
		if s.exact == nil {
			s.exact = map[string]bool{}
		}
		s.exact[m.raw] = true
		return
	}
	s.rest = append(s.rest, m)
}

// find returns the entry that matches one of names, and whether one does.
func (s *matchSet) find(names []string) (string, bool) {
	for _, n := range names {
		if s.exact[n] {
			return n, true
		}
	}
	for _, m := range s.rest {
		for _, n := range names {
			if m.match(n) {
				return m.raw, true
			}
		}
	}
	return "", false
}

// moduleNames returns the names a module is matched under: its own
// (compressed-tensors matches the module's name in the model it quantized,
// which the checkpoint keeps) and, for a language-model module, its name in
// every layout of model.LMLayouts (model.PlainName, then
// model.CheckpointNames: "model.layers.3.mlp", "language_model.model.layers.3.mlp",
// "model.language_model.layers.3.mlp", "language_model.layers.3.mlp"; the
// LM head "lm_head" and "language_model.lm_head"). An entry written for any
// of them matches: the memory plan asks under the plain name whatever the
// checkpoint's layout while the load asks under the stored one, and a
// config's lists follow the names of the model that was quantized, which
// need not be the stored layout (Kimi-K2.5 keeps Kimi-K2's ignore list,
// written for "lm_head" and "model.layers..."; transformers renames
// "language_model.model." to "model.language_model." when it loads a
// multimodal checkpoint). Repeats are left out.
func moduleNames(module string) []string {
	var names []string
	for _, n := range model.CheckpointNames(model.PlainName(module + ".weight")) {
		names = append(names, strings.TrimSuffix(n, ".weight"))
	}
	if !slices.Contains(names, module) {
		names = append(names, module)
	}
	return names
}

// matched is what group found for one module.
type matched struct {
	g   *compressedGroup
	why string
}

// group returns the config group that quantizes module (the first in
// config_groups key order whose targets match), or nil when the module is
// ignored or targeted by none; why says which ignore entry matched. The
// answer is kept per set of names (moduleNames), so the plan's
// and the load's questions about one module, under its plain and its
// stored name and several times each (Planned, Layout, Check, Load),
// match it once.
func (c *Compressed) group(module string) (g *compressedGroup, why string) {
	names := moduleNames(module)
	key := strings.Join(names, "\n")
	if m, ok := c.matched.Load(key); ok {
		return m.(matched).g, m.(matched).why
	}
	g, why = c.match(names)
	c.matched.Store(key, matched{g, why})
	return g, why
}

// match is group without the kept answers, for a module's names.
func (c *Compressed) match(names []string) (*compressedGroup, string) {
	if raw, ok := c.ignore.find(names); ok {
		return nil, fmt.Sprintf("ignored by %q", raw)
	}
	for i := range c.groups {
		if _, ok := c.groups[i].targets.find(names); ok {
			return &c.groups[i], ""
		}
	}
	return nil, "targeted by no config group"
}

// overlap returns an error when module is targeted by two config groups
// whose weights quantize differently (the first is the one group takes).
// compressed-tensors then picks by the kind of target that matched
// (utils/match.py: an exact name, then a regex, then a class; a target
// string listed by two groups belongs to the later one) and vLLM by its
// own order, so which group size or scheme the tensors follow cannot be
// told from the config; groups that agree quantize alike.
func (c *Compressed) overlap(module string) error {
	names := moduleNames(module)
	var first *compressedGroup
	var firstBy string
	for i := range c.groups {
		g := &c.groups[i]
		by, ok := g.targets.find(names)
		if !ok {
			continue
		}
		if first == nil {
			first, firstBy = g, by
			continue
		}
		if !sameWeights(first.w, g.w) {
			return fmt.Errorf("module %s is targeted by quantization_config.config_groups.%s (%q: %s) and .%s (%q: %s), which quantize differently; compressed-tensors and vLLM would choose between them by rules of their own: give each module one group",
				module, first.name, firstBy, first.w.describe(), g.name, by, g.w.describe())
		}
	}
	return nil
}

// sameWeights reports whether two groups' weights arguments are equal.
func sameWeights(a, b compressedWeights) bool {
	eqInt := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqStr := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.NumBits == b.NumBits && a.Type == b.Type && a.Symmetric == b.Symmetric && a.Strategy == b.Strategy &&
		a.Dynamic == b.Dynamic && eqInt(a.GroupSize, b.GroupSize) && eqStr(a.Actorder, b.Actorder)
}

// describe is a group's weights for a message: "int4 symmetric, group 32".
func (w compressedWeights) describe() string {
	sym := "symmetric"
	if !w.Symmetric {
		sym = "asymmetric"
	}
	return fmt.Sprintf("%s%d %s, group %d", w.Type, w.NumBits, sym, *w.GroupSize)
}
