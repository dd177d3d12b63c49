package repl

import "testing"

// TestInputIdsEmpty: `input ids` with nothing after it said `ids "": item
// 1 is empty`, a parser's account of an empty string; it says what to
// type.
func TestInputIdsEmpty(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("input ids", "input ids: want token ids, e.g. input ids 1,403,407")
	f.AssertError("input ids 1,2 ; ids", "input ids: want token ids, e.g. input ids 1,403,407")
}
