package debug

import "testing"

// TestInjectAtStopBeforeCapturedSite: a recording fault injected at a stop
// that comes before every captured site of the step (break layers.1,
// capture layers 3) was still applied in the stopped step: the capturer
// took the faults at its first visit of a step it had not seen, which was
// the stopped step itself, so layer 3 of a pass whose computation and
// earlier layers saw no fault was recorded scaled (and a nan-at made the
// dump refuse its own NaN). It now applies from the next step, as when a
// captured site came before the stop (TestInjectAtStopTakesNextStep):
// layer 3 as in a clean pass, nothing noted under faults; the next run
// records 2 × the clean values (by hand).
func TestInjectAtStopBeforeCapturedSite(t *testing.T) {
	injectAtStopNextStep(t, []int{3}, 3)
}
