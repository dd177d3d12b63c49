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
// operators &&, ||, !. It works on runes, so columns count characters and a
// stray non-ASCII character is named as typed.
func lex(text string) ([]token, error) {
	src := []rune(text)
	var out []token
	i := 0
	word := func(a, b int) string { return string(src[a:b]) }
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case isDigitR(c) || (c == '.' && i+1 < len(src) && isDigitR(src[i+1])):
			j := i
			for j < len(src) && (isDigitR(src[j]) || src[j] == '.' || src[j] == 'e' || src[j] == 'E' ||
				((src[j] == '+' || src[j] == '-') && j > i && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			// A literal beyond float64's range rounds to +Inf, as IEEE 754
			// and Python's float("1e400") round it (and 1e-400 to 0):
			// `absmax(stream) > 1e400` is then never true, as written.
			v, err := strconv.ParseFloat(word(i, j), 64)
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				err = nil
			}
			if err != nil {
				return nil, &CondError{Src: text, Col: i + 1, Msg: fmt.Sprintf("bad number %q", word(i, j))}
			}
			out = append(out, token{kind: tNum, text: word(i, j), num: v, col: i + 1})
			i = j
		case isLetterR(c):
			j := i
			for j < len(src) && (isLetterR(src[j]) || isDigitR(src[j])) {
				j++
			}
			w := word(i, j)
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
				two = word(i, i+2)
			}
			switch two {
			case "==", "!=", "<=", ">=", "&&", "||":
				out = append(out, token{kind: tOp, text: two, col: i + 1})
				i += 2
				continue
			}
			if strings.ContainsRune("<>!+-*/()", c) {
				out = append(out, token{kind: tOp, text: string(c), col: i + 1})
				i++
				continue
			}
			if c == '=' {
				return nil, &CondError{Src: text, Col: i + 1, Msg: "'=' is not an operator; compare with '=='"}
			}
			return nil, &CondError{Src: text, Col: i + 1, Msg: fmt.Sprintf("unexpected character %q", c)}
		}
	}
	return append(out, token{kind: tEOF, col: len(src) + 1}), nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// isDigitR and isLetterR are isDigit and isLetter on runes: names are
// ASCII (HF module paths, tensor and statistic names).
func isDigitR(r rune) bool  { return r < 128 && isDigit(byte(r)) }
func isLetterR(r rune) bool { return r < 128 && isLetter(byte(r)) }
