package jsonerr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestNewUser_JSONErrorsInJSONTerms: decoding errors name the field and
// the JSON value expected, not Go's types (each want written by hand).
func TestNewUser_JSONErrorsInJSONTerms(t *testing.T) {
	type fp8 struct {
		WeightBlockSize []int `json:"weight_block_size"`
	}
	type row struct {
		InputIDs []int64 `json:"input_ids"`
		Text     string  `json:"text"`
		Cfg      *struct {
			Eps float64 `json:"eps"`
		} `json:"cfg"`
		Tied bool `json:"tie_word_embeddings"`
	}
	for _, c := range []struct {
		in   string
		into any
		want string
	}{
		{`{"weight_block_size": "32"}`, &fp8{}, "weight_block_size: got a JSON string, want an array of integers"},
		{`{"weight_block_size": [1e3, 32]}`, &fp8{}, "weight_block_size: got number 1e3, want an integer"},
		{`{"input_ids": [1, 2.5]}`, &row{}, "input_ids: got number 2.5, want an integer"},
		{`{"input_ids": "1,2"}`, &row{}, "input_ids: got a JSON string, want an array of integers"},
		{`{"cfg": {"eps": "small"}}`, &row{}, "cfg.eps: got a JSON string, want a number"},
		{`{"tie_word_embeddings": "yes"}`, &row{}, "tie_word_embeddings: got a JSON string, want true or false"},
		{`[1, 2, 3]`, &row{}, "got a JSON array, want an object"},
		{`5`, &map[string]json.RawMessage{}, "got a JSON number, want an object"},
		{`{"text": }`, &row{}, "invalid JSON at byte 10: invalid character '}' looking for beginning of value"},
		// A number of the right kind beyond the type's range says so
		// (it said "want a number" of 1e400, a number).
		{`{"cfg": {"eps": 1e400}}`, &row{}, "cfg.eps: got number 1e400, beyond float64's range (magnitude at most 1.8e+308)"},
		{`{"input_ids": [9223372036854775808]}`, &row{}, "input_ids: got number 9223372036854775808, outside int64's range -9223372036854775808 to 9223372036854775807"},
		{`{"input_ids": [-9223372036854775809]}`, &row{}, "input_ids: got number -9223372036854775809, outside int64's range -9223372036854775808 to 9223372036854775807"},
		{`{"n": 300}`, &struct {
			N uint8 `json:"n"`
		}{}, "n: got number 300, outside uint8's range 0 to 255"},
		{`{"n": -1}`, &struct {
			N uint64 `json:"n"`
		}{}, "n: got number -1, outside uint64's range 0 to 18446744073709551615"},
		{`{"n": 1e3}`, &struct {
			N uint8 `json:"n"`
		}{}, "n: got number 1e3, want an integer"},
	} {
		err := Explain(json.Unmarshal([]byte(c.in), c.into))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	other := errors.New("other")
	if Explain(other) != other || Explain(nil) != nil {
		t.Error("Explain changed an error that is not json's")
	}
}

// TestKind: the JSON type of each kind of value by RFC 8259's grammar
// (leading whitespace skipped), and "nothing" for no value.
func TestKind(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": 1}`: "object", ` [1]`: "array", "\n\t\"s\"": "string",
		"true": "boolean", "false": "boolean", "null": "null",
		"-1.5e3": "number", "0": "number", "": "nothing", " \r\n": "nothing",
	} {
		if got := Kind([]byte(in)); got != want {
			t.Errorf("Kind(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExplainClipsNumbers: encoding/json puts a number's whole literal in
// its UnmarshalTypeError, so an id of a million digits (tokenizer.json,
// manifest.json, config.json) made an error of a megabyte; Explain quotes
// its first 40 bytes and its length (1 + 2^20 digits here).
func TestExplainClipsNumbers(t *testing.T) {
	var v struct {
		ID int32 `json:"id"`
	}
	lit := "1" + strings.Repeat("0", 1<<20)
	err := Explain(json.Unmarshal([]byte(`{"id": `+lit+`}`), &v))
	want := "id: got number " + lit[:40] + "... (1048577 bytes), outside int32's range -2147483648 to 2147483647"
	if err == nil || err.Error() != want {
		t.Errorf("got %.200v\nwant %s", err, want)
	}
	err = Explain(json.Unmarshal([]byte(`{"id": 1e400}`), &v))
	if want := "id: got number 1e400, want an integer"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
