package repl

import "testing"

// TestBreakCondTensorFirst: `break SITE if q absmax > 0`, the tensor and
// statistic written as `watch q absmax > 0` takes them, was refused with
// `unknown name "q" (want a statistic mean, std, ...)`, which does not
// say how to name a tensor's statistic in a condition; the error now
// gives the call form absmax(q), and that form is accepted.
func TestBreakCondTensorFirst(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("break layers.1 if stream absmax > 0", `unknown name "stream": a statistic of a tensor is written absmax(stream)`)
	f.AssertExec("break layers.1 if absmax(stream) > 0", "Breakpoint 1 at layers.1")
}
