package debug

import (
	"fmt"
	"slices"
	"strings"

	"hsdb/inspect/client"
)

// parser is a recursive-descent parser over the tokens of one condition.
type parser struct {
	src     string
	toks    []token
	pos     int
	watched string
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, msg string) error {
	return &CondError{Src: p.src, Col: t.col, Msg: msg}
}

func (p *parser) isOp(ops ...string) (string, bool) {
	t := p.peek()
	if t.kind != tOp {
		return "", false
	}
	for _, o := range ops {
		if t.text == o {
			return o, true
		}
	}
	return "", false
}

// binary parses a left-associative chain of ops over sub.
func (p *parser) binary(sub func() (node, error), ops ...string) (node, error) {
	l, err := sub()
	if err != nil {
		return nil, err
	}
	for {
		op, ok := p.isOp(ops...)
		if !ok {
			return l, nil
		}
		p.next()
		r, err := sub()
		if err != nil {
			return nil, err
		}
		l = &binNode{op: op, l: l, r: r}
	}
}

func (p *parser) or() (node, error)   { return p.binary(p.and, "||") }
func (p *parser) and() (node, error)  { return p.binary(p.not, "&&") }
func (p *parser) sum() (node, error)  { return p.binary(p.prod, "+", "-") }
func (p *parser) prod() (node, error) { return p.binary(p.unary, "*", "/") }

func (p *parser) not() (node, error) {
	if _, ok := p.isOp("!"); ok {
		p.next()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unNode{op: "!", x: x}, nil
	}
	return p.cmp()
}

func (p *parser) cmp() (node, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	op, ok := p.isOp("==", "!=", "<", "<=", ">", ">=")
	if !ok {
		return l, nil
	}
	p.next()
	r, err := p.sum()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind == tOp && (t.text == "<" || t.text == ">" || t.text == "==" || t.text == "!=" || t.text == "<=" || t.text == ">=") {
		return nil, p.errAt(t, "comparisons do not chain; join them with &&")
	}
	return &binNode{op: op, l: l, r: r}, nil
}

func (p *parser) unary() (node, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return &numNode{v: t.num}, nil
	case tName:
		return p.name(t)
	case tOp:
		switch t.text {
		case "-":
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &unNode{op: "-", x: x}, nil
		case "(":
			x, err := p.or()
			if err != nil {
				return nil, err
			}
			if c := p.next(); c.kind != tOp || c.text != ")" {
				return nil, p.errAt(c, fmt.Sprintf("expected ')' to close the '(' at column %d, found %s", t.col, c))
			}
			return x, nil
		}
	}
	return nil, p.errAt(t, fmt.Sprintf("expected a number, a name or '(', found %s", t))
}

// name parses what follows a word: a call STAT(TENSOR), a variable, or a
// bare statistic.
func (p *parser) name(t token) (node, error) {
	if _, call := p.isOp("("); call {
		if !isStat(t.text) {
			return nil, p.errAt(t, fmt.Sprintf("unknown statistic %q (want one of %s)", t.text, statList()))
		}
		p.next()
		arg := p.next()
		if arg.kind != tName {
			return nil, p.errAt(arg, fmt.Sprintf("expected a tensor name in %s(...), found %s", t.text, arg))
		}
		if c := p.next(); c.kind != tOp || c.text != ")" {
			return nil, p.errAt(c, fmt.Sprintf("expected ')' after %s(%s, found %s", t.text, arg.text, c))
		}
		return &statNode{stat: t.text, tensor: arg.text}, nil
	}
	if slices.Contains(client.CondVars, t.text) {
		return &varNode{name: t.text}, nil
	}
	if isStat(t.text) {
		if p.watched != "" {
			return &statNode{stat: t.text, tensor: p.watched}, nil
		}
		switch t.text {
		case "nan", "inf", "zeros":
			return &statNode{stat: t.text}, nil
		}
		return nil, p.errAt(t, fmt.Sprintf("%s needs a tensor: %s(hidden_states)", t.text, t.text))
	}
	if t.text == "if" && t.col == 1 { // `watch stream if absmax > 5`, `condition 1 if nan`: gdb's `if` where none is taken
		if p.watched != "" {
			return nil, p.errAt(t, fmt.Sprintf("watch takes no `if`: the condition follows the tensor (watch %s absmax > 500)", p.watched))
		}
		return nil, p.errAt(t, "`if` is not part of the condition: condition N absmax(residual) > 1e4, break SITE if absmax(residual) > 1e4")
	}
	if n := p.peek(); n.kind == tName && isStat(n.text) { // `q absmax > 0`: watch's bare form, tensor first
		return nil, p.errAt(t, fmt.Sprintf("unknown name %q: a statistic of a tensor is written %s(%s) (only `watch %s COND` takes the tensor apart and the statistic bare)", t.text, n.text, t.text, t.text))
	}
	return nil, p.errAt(t, fmt.Sprintf("unknown name %q (want a statistic %s, or a name %s)", t.text, statList(), strings.Join(client.CondVars, ", ")))
}
