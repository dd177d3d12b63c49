package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"hsdb/engine/jsonerr"
)

// configSyntax words why config.json's bytes did not decode as a JSON
// object: empty, another JSON value (an array...), or invalid JSON at a
// byte offset, with the line and the bytes there, or cut short. NaN and Infinity,
// which Python's json.dump writes for a float that is not finite and
// JSON has no literal for, are named as such.
func configSyntax(data []byte, err error) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("config.json is empty (%d bytes): want a JSON object", len(data))
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("config.json is a JSON %s, want an object", jsonerr.Kind(data))
		}
		return fmt.Errorf("config.json is not a JSON object: %w", jsonerr.Explain(err))
	}
	if se.Error() == "unexpected end of JSON input" {
		return fmt.Errorf("config.json ends before its JSON does (%d bytes: cut short?): %s", len(data), se.Error())
	}
	off := max(int(se.Offset)-1, 0) // the byte json stopped at
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	at := data[off:min(len(data), off+16)]
	if i := bytes.IndexByte(at, '\n'); i >= 0 {
		at = at[:i]
	}
	for _, lit := range []string{"NaN", "-Infinity", "Infinity"} {
		from := off
		if lit[0] == '-' { // json stops at the letter after the sign
			from = max(off-1, 0)
		}
		if bytes.HasPrefix(data[from:], []byte(lit)) {
			return fmt.Errorf("config.json line %d (byte %d): %s is not JSON (Python's json.dump writes it for a float that is not finite); write a number or null", line, from, lit)
		}
	}
	return fmt.Errorf("config.json line %d (byte %d, at %q): invalid JSON: %s", line, off, at, se.Error())
}
