package debug

import (
	"fmt"
	"slices"
	"strings"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

// Cond is a parsed stop condition: a small expression over the statistics
// of the tensors at a site, evaluated on each rank; a breakpoint or watch
// fires when it holds (is non-zero) on at least one rank.
//
// Grammar, loosest binding first (C's precedence; "and", "or", "not" may
// be written for &&, ||, !):
//
//	cond  = or
//	or    = and { "||" and }
//	and   = not { "&&" not }
//	not   = "!" not | cmp
//	cmp   = sum [ ("==" | "!=" | "<" | "<=" | ">" | ">=") sum ]
//	sum   = prod { ("+" | "-") prod }
//	prod  = unary { ("*" | "/") unary }
//	unary = "-" unary | NUMBER | NAME | STAT "(" TENSOR ")" | "(" cond ")"
//
// STAT is one of stats.StatNames (mean, std, min, max, absmax, l2 or
// norm, nan, inf, zeros, count) applied to a tensor of the site:
// absmax(residual). NAME is rank, step (0 for the prefill), layer (-1
// outside decoder layers) or tokens (in the step's batch); nan, inf and
// zeros alone count over every tensor of the site, so `nan` alone means "a
// NaN anywhere here". In a watch, every STAT alone applies to the watched
// tensor: `watch stream absmax > 500`. Comparisons give 1 or 0; a
// comparison with NaN is false, != included. The statistics over finite
// elements (mean, std, min, max, absmax, l2) of a tensor with no finite
// element are NaN (undefined), so `std(x) == 0` does not hold for an
// all-NaN x; test `nan(x) > 0` for that.
type Cond struct {
	Src     string
	root    node
	watched string
}

// CondError is a malformed condition: Col is the 1-based column of the
// offending token in Src.
type CondError struct {
	Src string
	Col int
	Msg string
}

// Error renders `condition "SRC": column N: MSG`.
func (e *CondError) Error() string {
	return fmt.Sprintf("condition %q: column %d: %s", e.Src, e.Col, e.Msg)
}

// Unwrap makes errors.Is(err, ErrCond) hold.
func (e *CondError) Unwrap() error { return client.ErrCond }

// maxCondBytes bounds a condition's source: the parser recurses once per
// '(', unary '-' or '!', and a script line of a million of them (within
// the 16 MiB line bound) overflowed the stack, a fatal error no recover
// catches. A condition a person writes is a few dozen bytes.
const maxCondBytes = 4096

// ParseCond parses src. watched is the tensor of a watch ("" for a
// breakpoint condition): bare statistic names then refer to it. Errors are
// *CondError; a src over maxCondBytes is refused before it is lexed.
func ParseCond(src, watched string) (*Cond, error) {
	if len(src) > maxCondBytes {
		return nil, &CondError{Src: src[:40] + "...", Col: maxCondBytes + 1, Msg: fmt.Sprintf("the condition is %d bytes; a condition may be at most %d bytes", len(src), maxCondBytes)}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks, watched: watched}
	if toks[0].kind == tEOF {
		return nil, p.errAt(toks[0], "empty condition")
	}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, fmt.Sprintf("unexpected %s after a complete condition", t))
	}
	return &Cond{Src: src, root: root, watched: watched}, nil
}

// Tensors returns the tensor names the condition reads, in order of first
// use ("" is not included: bare nan/inf read every tensor).
func (c *Cond) Tensors() []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		switch n := n.(type) {
		case *statNode:
			if n.tensor != "" && !slices.Contains(out, n.tensor) {
				out = append(out, n.tensor)
			}
		case *unNode:
			walk(n.x)
		case *binNode:
			walk(n.l)
			walk(n.r)
		}
	}
	walk(c.root)
	return out
}

// condEnv is what a condition reads on one rank at one site.
type condEnv interface {
	// stats returns the statistics of tensor name (ok false when the site
	// does not show it); name "" asks for all tensors merged.
	stats(name string) (stats.Stats, bool)
	variable(name string) float64
}

// eval evaluates the condition on one rank; a tensor the site does not
// show makes the condition false (with ok false).
func (c *Cond) eval(env condEnv) (v float64, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if _, missing := p.(missingTensor); !missing {
				panic(p)
			}
			v, ok = 0, false
		}
	}()
	return c.root.eval(env), true
}

type missingTensor string

type node interface{ eval(env condEnv) float64 }

type numNode struct{ v float64 }

func (n *numNode) eval(condEnv) float64 { return n.v }

type varNode struct{ name string }

func (n *varNode) eval(env condEnv) float64 { return env.variable(n.name) }

type statNode struct{ stat, tensor string }

func (n *statNode) eval(env condEnv) float64 {
	s, ok := env.stats(n.tensor)
	if !ok {
		panic(missingTensor(n.tensor))
	}
	v, _ := s.Get(n.stat)
	return v
}

type unNode struct {
	op string
	x  node
}

func (n *unNode) eval(env condEnv) float64 {
	x := n.x.eval(env)
	if n.op == "-" {
		return -x
	}
	return b2f(x == 0)
}

// constValue is the value of n when n is a number or a number negated
// (-1 is the unary minus of 1 to the parser): CheckRanks looked at bare
// numbers only, so `rank == -1` was not refused as `rank == 5` is.
func constValue(n node) (float64, bool) {
	switch x := n.(type) {
	case *numNode:
		return x.v, true
	case *unNode:
		if v, ok := constValue(x.x); ok && x.op == "-" {
			return -v, true
		}
	}
	return 0, false
}

type binNode struct {
	op   string
	l, r node
}

func (n *binNode) eval(env condEnv) float64 {
	switch n.op {
	case "&&":
		return b2f(n.l.eval(env) != 0 && n.r.eval(env) != 0)
	case "||":
		return b2f(n.l.eval(env) != 0 || n.r.eval(env) != 0)
	}
	a, b := n.l.eval(env), n.r.eval(env)
	switch n.op {
	case "==", "!=", "<", "<=", ">", ">=":
		if a != a || b != b { // NaN: an undefined statistic; no comparison holds, != neither
			return 0
		}
	}
	switch n.op {
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "/":
		return a / b
	case "==":
		return b2f(a == b)
	case "!=":
		return b2f(a != b)
	case "<":
		return b2f(a < b)
	case "<=":
		return b2f(a <= b)
	case ">":
		return b2f(a > b)
	}
	return b2f(a >= b)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func isStat(name string) bool {
	_, ok := stats.Stats{}.Get(name)
	return ok
}

func statList() string { return strings.Join(stats.StatNames, ", ") }

// rankOnly is the environment of a comparison of rank with a number.
type rankOnly int

func (r rankOnly) stats(string) (stats.Stats, bool) { return stats.Stats{}, false }
func (r rankOnly) variable(string) float64          { return float64(r) }

// CheckRanks returns an error wrapping ErrRank when the condition requires
// a comparison of rank with a number that holds on no rank of a world of
// world ranks (`rank == 3` at world size 2): such a breakpoint could never
// fire. Only comparisons joined to the whole condition by && are checked;
// one under || or ! may be false without making the condition false.
func (c *Cond) CheckRanks(world int) error {
	var bad string
	var walk func(n node)
	walk = func(n node) {
		b, ok := n.(*binNode)
		if !ok || bad != "" {
			return
		}
		if b.op == "&&" {
			walk(b.l)
			walk(b.r)
			return
		}
		v, num := b.l, b.r
		if _, isNum := constValue(v); isNum {
			v, num = num, v
		}
		vn, isVar := v.(*varNode)
		k, isNum := constValue(num)
		if !isVar || vn.name != "rank" || !isNum {
			return
		}
		for r := range world {
			if b.eval(rankOnly(r)) != 0 {
				return
			}
		}
		bad = fmt.Sprintf("rank %s %g", b.op, k)
		if b.l == num {
			bad = fmt.Sprintf("%g %s rank", k, b.op)
		}
	}
	walk(c.root)
	if bad == "" {
		return nil
	}
	return fmt.Errorf("%w: condition %q can never hold: %s is false on every rank of this world of %d (ranks 0-%d)", client.ErrRank, c.Src, bad, world, world-1)
}
