package model

import (
	"testing"
)

// TestConfigSyntaxNamed: config.json that is not a JSON object says what
// it is and where it goes wrong: before, every case read "config.json is
// not a JSON object: <encoding/json's words>", with no byte or line
// (NaN, which Python's json.dump writes, read "invalid character 'N'
// looking for beginning of value"). Offsets counted by hand from 0.
func TestConfigSyntaxNamed(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "config.json is empty (0 bytes): want a JSON object"},
		{" \n", "config.json is empty (2 bytes): want a JSON object"},
		{"[1, 2]", "config.json is a JSON array, want an object"},
		{"null", "config.json is JSON null, want an object"},
		{" null\n", "config.json is JSON null, want an object"},
		{`"llama"`, "config.json is a JSON string, want an object"},
		{"{\"a\": 1,\n \"b\": }", `config.json line 2 (byte 15, at "}"): invalid JSON: invalid character '}' looking for beginning of value`},
		{`{"rope_theta": NaN}`, "config.json line 1 (byte 15): NaN is not JSON (Python's json.dump writes it for a float that is not finite); write a number or null"},
		{`{"x": -Infinity}`, "config.json line 1 (byte 6): -Infinity is not JSON (Python's json.dump writes it for a float that is not finite); write a number or null"},
		{`{"x": Infinity}`, "config.json line 1 (byte 6): Infinity is not JSON (Python's json.dump writes it for a float that is not finite); write a number or null"},
		{`{"hidden_size": 96`, "config.json ends before its JSON does (18 bytes: cut short?): unexpected end of JSON input"},
		{`{"a": 1} x`, `config.json line 1 (byte 9, at "x"): invalid JSON: invalid character 'x' after top-level value`},
	} {
		_, _, err := ParseConfig([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseConfig(%q) error\n got %v\nwant %s", c.in, err, c.want)
		}
	}
}
