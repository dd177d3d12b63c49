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

// TestInputEmptyPart: `input text "x" ;` (a trailing ';') and `input ids
// 1 ;; ids 2` were refused as `input: "": want ids, text or file`, quoting
// nothing; the message now says which part is empty (counted by hand: the
// part after the last ';' of two is part 2; between ";;" of three, part 2).
func TestInputEmptyPart(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError(`input text "x" ;`, "input: part 2 of 2 (between ';') is empty")
	f.AssertError("input ids 1 ;; ids 2", "input: part 2 of 3 (between ';') is empty")
	f.AssertError("input words 1", `"words": want ids, text or file`)
}
