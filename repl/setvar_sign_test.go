package repl

import "testing"

// TestSetVarSignedValue: `= +1` and `= +inf` assign a signed number as `=
// -2` does (help set: VALUE is a number, or an operator and a number
// written apart: `+ 1`, `- 2`); after the tensor's own name (`stream +1`,
// `stream -2`) a sign is the operator. The values printed back are the
// ones assigned by hand; one-sided operator parsing added 1 to the element
// instead of setting it, and `stream -2` set it to -2.
func TestSetVarSignedValue(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	f.AssertExec("set var stream[0, 1] = +1", "stream[0:1, 1:2] = 1 ")
	f.AssertExec("print stream[0, 1]", "0: [1]")
	f.AssertExec("set var stream[0, 1] = stream -3", "stream[0:1, 1:2] - 3 ")
	f.AssertExec("print stream[0, 1]", "0: [-2]")
	f.AssertExec("set var stream[0, 1] = stream +5", "stream[0:1, 1:2] + 5 ")
	f.AssertExec("print stream[0, 1]", "0: [3]")
	f.AssertExec("set var stream[0, 1] = + 1", "stream[0:1, 1:2] + 1 ")
	f.AssertExec("print stream[0, 1]", "0: [4]")
	f.AssertExec("set var stream[0, 1] = -2", "stream[0:1, 1:2] = -2 ")
	f.AssertExec("set var stream[0, 1] = +inf", "stream[0:1, 1:2] = +Inf ")
	f.AssertExec("print stream[0, 1]", "0: [+Inf]")
	f.AssertExec("set var stream[0, 1] = -inf", "= -Inf ")
	f.AssertExec("print stream[0, 1]", "0: [-Inf]")
}
