// Package jsonerr words encoding/json's decoding errors for the person who
// wrote the file: the field path and what was expected, in JSON's terms
// ("weight_block_size: got a JSON string, want an array of integers"),
// instead of Go's type names ("cannot unmarshal string into Go struct field
// fp8Config.weight_block_size of type []int"). It imports only the standard
// library; readers of config.json, quantization_config, tokenizer configs
// and --data rows wrap their json.Unmarshal errors with Explain, and name a
// value's JSON type with Kind (safetensors headers, quantization_config).
package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// maxNumber is the most bytes of a number literal Explain quotes; a
// longer one is clipped and its length given.
const maxNumber = 40

// Explain returns err reworded when it is (or wraps) a
// *json.UnmarshalTypeError: "FIELD: got a JSON VALUE, want WHAT"
// (FIELD is json's dotted path, absent at the top level; a number
// literal of more than 40 bytes clipped, its length given). A
// *json.SyntaxError gets its byte offset. Any other error (nil included)
// is returned unchanged.
func Explain(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got := te.Value
		if num, ok := strings.CutPrefix(got, "number "); ok && len(num) > maxNumber {
			// json puts the whole literal in Value: a number of a million
			// digits made an error of a megabyte. Numbers are ASCII.
			got = fmt.Sprintf("number %s... (%d bytes)", num[:maxNumber], len(num))
		}
		if !strings.HasPrefix(got, "number ") {
			got = "a JSON " + got
		}
		msg := fmt.Sprintf("got %s, want %s", got, want(te.Type))
		if r := outOfRange(te.Value, te.Type); r != "" {
			msg = fmt.Sprintf("got %s, %s", got, r)
		}
		if te.Field != "" {
			msg = te.Field + ": " + msg
		}
		return errors.New(msg)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	}
	return err
}

// Kind names the JSON type of a valid JSON value by its first byte, for
// messages: "object", "array", "string", "boolean", "null" or "number";
// "nothing" for an empty (or all-whitespace) value.
func Kind(v []byte) string {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// outOfRange says why a JSON number that is of the kind t wants (any
// number for a float, an integer literal for an integer) did not decode
// into t: beyond its range ("beyond float64's range (magnitude at most
// 1.8e308)", "outside int32's range -2147483648 to 2147483647"); "" when
// value is no such number, so the error is one of kind (2.5 for an
// integer), worded by want.
func outOfRange(value string, t reflect.Type) string {
	num, ok := strings.CutPrefix(value, "number ")
	if !ok || t == nil {
		return ""
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("beyond %s's range (magnitude at most %.2g)", t.Kind(), maxFloat(t.Kind()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !isIntLiteral(num) {
			return ""
		}
		bits := t.Bits()
		return fmt.Sprintf("outside %s's range %d to %d", t.Kind(), int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !isIntLiteral(num) {
			return ""
		}
		return fmt.Sprintf("outside %s's range 0 to %d", t.Kind(), uint64(1)<<(t.Bits()-1)-1+uint64(1)<<(t.Bits()-1))
	}
	return ""
}

// maxFloat is the largest finite value of a float kind.
func maxFloat(k reflect.Kind) float64 {
	if k == reflect.Float32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}

// isIntLiteral reports whether a JSON number literal is written as an
// integer: an optional minus sign and digits, no fraction or exponent.
func isIntLiteral(num string) bool {
	num = strings.TrimPrefix(num, "-")
	if num == "" {
		return false
	}
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// want describes a Go type as the JSON value that decodes into it.
func want(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return want(t.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(want(t.Elem()))
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another value"
}

// plural turns "an integer" into "integers", "an array of x" into "arrays
// of x".
func plural(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "an "), "a ")
	if rest, ok := strings.CutPrefix(s, "array of "); ok {
		return "arrays of " + rest
	}
	switch s {
	case "true or false":
		return "booleans"
	case "another value":
		return "values"
	}
	return s + "s"
}

// IsNull reports whether v is the JSON literal null (surrounding
// whitespace allowed): a config field written as null, which HF keeps as
// None, unlike a field left out.
func IsNull(v []byte) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
