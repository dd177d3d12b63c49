package repl

import "testing"

// TestSetVarRankBound: at tp 2, `set var stream = stream --rank 5` names
// the rank bound (the world has ranks 0 and 1) rather than saying the
// value changes nothing, as `inject --rank 5` words it; a rank in range
// still gets the changes-nothing error, and a value at --rank 5 the bound.
func TestSetVarRankBound(t *testing.T) {
	f := newFake(t, 2)
	f.AssertError("set var stream = stream --rank 5", "set var: --rank 5: the model runs on 2 ranks (0-1)")
	f.AssertError("set var stream = 1 --rank 2", "set var: --rank 2: the model runs on 2 ranks (0-1)")
	f.AssertError("set var stream = stream --rank 1", "set var: stream = stream changes nothing")
}
