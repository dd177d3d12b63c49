package safetensors

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// splitByEncodingJSON is the reference the scanner is held to: whether
// encoding/json accepts raw as JSON, whether it is an object, and its
// members as json.Decoder splits them (keys decoded, values compacted).
func splitByEncodingJSON(raw []byte) (valid, object bool, keys []string, vals []string) {
	if !json.Valid(raw) {
		return false, false, nil, nil
	}
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if raw[0] != '{' {
		return true, false, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.Token()
	for dec.More() {
		tok, _ := dec.Token()
		var v json.RawMessage
		dec.Decode(&v)
		var c bytes.Buffer
		json.Compact(&c, v)
		keys, vals = append(keys, tok.(string)), append(vals, c.String())
	}
	return true, true, keys, vals
}

// checkScanner compares the scanner's verdict and split of raw with
// encoding/json's: a document the scanner accepts, encoding/json accepts
// with the same members; one the scanner refuses (and hands to
// encoding/json for its error), encoding/json refuses too, except for
// invalid UTF-8, which encoding/json lets through (replacing it) and
// splitHeader refuses before scanning.
func checkScanner(t *testing.T, raw []byte) {
	valid, object, keys, vals := splitByEncodingJSON(raw)
	i := skipWS(raw, 0)
	end := skipValue(raw, i, 0)
	accepted := end >= 0 && skipWS(raw, end) == len(raw)
	if accepted != valid {
		t.Fatalf("%q: scanner accepts=%v, encoding/json valid=%v", raw, accepted, valid)
	}
	if !accepted || !object || !utf8.Valid(raw) {
		return
	}
	var gk, gv []string
	if err := members(raw[i:end], func(k string, v []byte) error {
		var c bytes.Buffer
		json.Compact(&c, v)
		gk, gv = append(gk, k), append(gv, c.String())
		return nil
	}); err != nil {
		t.Fatalf("%q: members: %v", raw, err)
	}
	if len(gk) != len(keys) {
		t.Fatalf("%q: scanner splits %d members %q, encoding/json %d %q", raw, len(gk), gk, len(keys), keys)
	}
	for j := range gk {
		if gk[j] != keys[j] || gv[j] != vals[j] {
			t.Fatalf("%q: member %d is %q: %s, encoding/json says %q: %s", raw, j, gk[j], gv[j], keys[j], vals[j])
		}
	}
}

// scannerSeeds are JSON documents valid and not, at the edges of the
// grammar (numbers, escapes, literals, nesting, whitespace).
var scannerSeeds = []string{
	`{}`, ` { } `, `[]`, `{"a":1}`, `{"a":1,}`, `{"a" : [1, 2 , 3] , "b":{"c":null}}`, `{"a":1}{}`, `{"a":1} x`,
	`{"a":-0}`, `{"a":01}`, `{"a":1.}`, `{"a":1.5e+3}`, `{"a":1E5}`, `{"a":-}`, `{"a":.5}`, `{"a":1e}`, `{"a":+1}`,
	`{"a":tru}`, `{"a":true}`, `{"a":false,"b":null}`, `{"a":nul}`, `{"a":"\u00e9\n\"\\\/"}`, `{"\u0041":1}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", "{\"a\":\"é\"}", `{"a":"b"`, `{"a"}`, `{"a":}`, `{,}`, `{"a":1 "b":2}`,
	`{"a":[1,]}`, `{"a":[,1]}`, `{"a":[[[[]]]]}`, "\t{\"a\"\r\n:\n1}\n", `"s"`, `1`, `null`, ``, ` `, `{"a":{"b":{"c":[{"d":"e"}]}}}`,
	`{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"__metadata__":{"format":"pt"}}`, `{"a":1,"a":2}`,
}

// TestScannerAgreesWithEncodingJSON: the header scanner accepts exactly
// what encoding/json accepts and splits objects as json.Decoder does, on
// the seeds, on every bad and reference file's header, and on a nesting
// just within and just past encoding/json's depth limit.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range scannerSeeds {
		checkScanner(t, []byte(s))
	}
	for _, c := range badFiles() {
		if len(c.data) >= 8 && leU64(c.data) <= uint64(len(c.data)-8) {
			checkScanner(t, c.data[8:8+leU64(c.data)])
		}
	}
	for _, d := range []int{maxJSONDepth, maxJSONDepth + 1} {
		checkScanner(t, []byte(`{"a":`+string(bytes.Repeat([]byte("["), d-1))+string(bytes.Repeat([]byte("]"), d-1))+`}`))
	}
}

// FuzzScanner mutates the seeds; `go test -fuzz FuzzScanner` runs it.
func FuzzScanner(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkScanner(t, raw) })
}
