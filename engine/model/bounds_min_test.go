package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestMaxPosBoundSaysOneRange: max_position_embeddings -1, 0 and 1.5 are
// refused with the same range, "an integer from 1 to 268435456" (2^28):
// -1 said "from 0", which 0 then contradicted ("from 1").
func TestMaxPosBoundSaysOneRange(t *testing.T) {
	for _, v := range []string{"-1", "0", "1.5", `"64"`} {
		err := CheckBounds(map[string]json.RawMessage{"max_position_embeddings": json.RawMessage(v)}, "config.json")
		want := "config.json: max_position_embeddings " + v + " is out of range (want an integer from 1 to 268435456)"
		if !errors.Is(err, ErrConfigLimit) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %q", v, err, want)
		}
	}
	if err := CheckBounds(map[string]json.RawMessage{"max_position_embeddings": json.RawMessage("1")}, "config.json"); err != nil {
		t.Errorf("1: %v", err)
	}
}
