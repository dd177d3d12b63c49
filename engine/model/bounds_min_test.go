package model

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestMaxPosBoundSaysOneRange: max_position_embeddings -1, 0, 1.5 and
// "64" are refused with the same range, "an integer from 1 to 268435456"
// (2^28): -1 said "from 0", which 0 then contradicted ("from 1"); 1.5
// says it is no integer and "64" that it is a JSON string, where both
// were called out of range.
func TestMaxPosBoundSaysOneRange(t *testing.T) {
	for v, want := range map[string]string{
		"-1":   "config.json: max_position_embeddings -1 is out of range (want an integer from 1 to 268435456)",
		"0":    "config.json: max_position_embeddings 0 is out of range (want an integer from 1 to 268435456)",
		"1.5":  "config.json: max_position_embeddings 1.5 is not an integer (want an integer from 1 to 268435456)",
		`"64"`: `config.json: max_position_embeddings: got a JSON string "64", want an integer from 1 to 268435456`,
	} {
		err := CheckBounds(map[string]json.RawMessage{"max_position_embeddings": json.RawMessage(v)}, "config.json")
		if !errors.Is(err, ErrConfigLimit) || err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %q", v, err, want)
		}
	}
	if err := CheckBounds(map[string]json.RawMessage{"max_position_embeddings": json.RawMessage("1")}, "config.json"); err != nil {
		t.Errorf("1: %v", err)
	}
}
