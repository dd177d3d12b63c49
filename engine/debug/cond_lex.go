package debug

import (
	"fmt"
	"strconv"
	"strings"
)

// tokKind is the kind of a condition token.
type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tName
	tOp // one of == != < <= > >= && || ! + - * / ( )
)

type token struct {
	kind tokKind
	text string
	num  float64
	col  int // 1-based column in the condition text
}

// String quotes the token for messages ("end of condition" at the end).
func (t token) String() string {
	if t.kind == tEOF {
		return "end of condition"
	}
	return fmt.Sprintf("%q", t.text)
}

// lex splits a condition into tokens. Words "and", "or", "not" are the
// operators &&, ||, !.
func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i
			for j < len(src) && (isDigit(src[j]) || src[j] == '.' || src[j] == 'e' || src[j] == 'E' ||
				((src[j] == '+' || src[j] == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			v, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return nil, &CondError{Src: src, Col: i + 1, Msg: fmt.Sprintf("bad number %q", src[i:j])}
			}
			out = append(out, token{kind: tNum, text: src[i:j], num: v, col: i + 1})
			i = j
		case isLetter(c):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			w := src[i:j]
			switch strings.ToLower(w) {
			case "and":
				out = append(out, token{kind: tOp, text: "&&", col: i + 1})
			case "or":
				out = append(out, token{kind: tOp, text: "||", col: i + 1})
			case "not":
				out = append(out, token{kind: tOp, text: "!", col: i + 1})
			default:
				out = append(out, token{kind: tName, text: w, col: i + 1})
			}
			i = j
		default:
			two := ""
			if i+1 < len(src) {
				two = src[i : i+2]
			}
			switch two {
			case "==", "!=", "<=", ">=", "&&", "||":
				out = append(out, token{kind: tOp, text: two, col: i + 1})
				i += 2
				continue
			}
			if strings.IndexByte("<>!+-*/()", c) >= 0 {
				out = append(out, token{kind: tOp, text: string(c), col: i + 1})
				i++
				continue
			}
			if c == '=' {
				return nil, &CondError{Src: src, Col: i + 1, Msg: "'=' is not an operator; compare with '=='"}
			}
			return nil, &CondError{Src: src, Col: i + 1, Msg: fmt.Sprintf("unexpected character %q", c)}
		}
	}
	return append(out, token{kind: tEOF, col: len(src) + 1}), nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
