package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
)

// A validating JSON scanner for the header, so that a header of millions
// of entries (an 89 MB header of 1.5 million zero-size tensors is under
// MaxHeaderSize) is split and decoded in a few passes over its bytes
// instead of encoding/json's reflection per entry and per field
// (BenchmarkHeader1_5MZeroTensors on the 2-core development VM: 7.9-9.4 s
// before, 2.3 s after, the rest mostly the name maps; BenchmarkOpenHeader,
// 4096 tensors: 26 ms before, 5 ms after). It follows RFC 8259's grammar
// as encoding/json's scanner (scanner.go) does: a document it accepts,
// encoding/json accepts and splits the same way (TestScannerAgreesWithEncodingJSON,
// FuzzScanner); anything it refuses, splitHeader hands to encoding/json,
// whose error is the one reported. Strings are taken as their bytes when
// they have no escape (the header's UTF-8 is checked before), and decoded
// by encoding/json when they have one.

// maxJSONDepth is encoding/json's limit on nesting (maxNestingDepth).
const maxJSONDepth = 10000

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// b[i] (no leading whitespace), or -1 when none does.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return -1
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == close {
			return i + 1
		}
		for {
			if c == '{' {
				if i = skipString(b, i); i < 0 {
					return -1
				}
				if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipWS(b, i+1)
			}
			if i = skipValue(b, i, depth+1); i < 0 {
				return -1
			}
			if i = skipWS(b, i); i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
			case close:
				return i + 1
			default:
				return -1
			}
		}
	case c == '"':
		return skipString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	}
	return -1
}

func skipLiteral(b []byte, i int, lit string) int {
	if bytes.HasPrefix(b[i:], []byte(lit)) {
		return i + len(lit)
	}
	return -1
}

// skipString returns the index just past the JSON string that starts at
// b[i], or -1: no opening or closing quote, a control byte, or an escape
// other than \" \\ \/ \b \f \n \r \t \uXXXX.
func skipString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 5
			default:
				return -1
			}
		}
	}
	return -1
}

// skipNumber returns the index just past the JSON number at b[i], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) int {
	digits := func(i int) int {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}

// trimWS drops JSON whitespace from both ends of v.
func trimWS(v []byte) []byte {
	v = v[skipWS(v, 0):]
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\n' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	return v
}

// decodeString returns the JSON string v (valid, as skipString takes it,
// surrounding whitespace allowed): its bytes when it has no escape (a
// copy, never aliasing v), else encoding/json's decoding.
func decodeString(v []byte) (string, bool) {
	v = trimWS(v)
	if len(v) < 2 || v[0] != '"' || skipString(v, 0) != len(v) {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// errNotObject is members' answer for a value that is not one valid JSON
// object.
var errNotObject = errors.New("not a valid JSON object")

// members calls f with the decoded key and the raw value (no surrounding
// whitespace) of each member of the JSON object v, in order, duplicates
// included, after checking the whole of v; it stops at f's first error
// and returns it. Errors: errNotObject, or f's.
func members(v []byte, f func(key string, val []byte) error) error {
	v = trimWS(v)
	if len(v) == 0 || v[0] != '{' || skipValue(v, 0, 0) != len(v) {
		return errNotObject
	}
	i := skipWS(v, 1)
	if v[i] == '}' {
		return nil
	}
	for {
		ke := skipString(v, i)
		key, ok := decodeString(v[i:ke])
		if !ok {
			return errNotObject
		}
		i = skipWS(v, skipWS(v, ke)+1) // past ':'
		ve := skipValue(v, i, 1)
		if err := f(key, v[i:ve]); err != nil {
			return err
		}
		i = skipWS(v, ve)
		if v[i] == '}' {
			return nil
		}
		i = skipWS(v, i+1) // past ','
	}
}

// elements returns the raw elements (no surrounding whitespace) of the
// JSON array v, or false when v is not one valid JSON array. It stops
// after limit+1 elements: a caller seeing more than limit refuses the
// array without the rest being sliced.
func elements(v []byte, limit int) ([][]byte, bool) {
	v = trimWS(v)
	if len(v) == 0 || v[0] != '[' || skipValue(v, 0, 0) != len(v) {
		return nil, false
	}
	var out [][]byte
	i := skipWS(v, 1)
	if v[i] == ']' {
		return out, true
	}
	for {
		e := skipValue(v, i, 1)
		if out = append(out, v[i:e]); len(out) > limit {
			return out, true // the caller refuses it: limit+1 elements, the rest unread
		}
		i = skipWS(v, e)
		if v[i] == ']' {
			return out, true
		}
		i = skipWS(v, i+1)
	}
}
