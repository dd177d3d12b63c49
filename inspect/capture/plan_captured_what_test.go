package capture

import (
	"errors"
	"strings"
	"testing"
)

// TestPlanCapturedWhatSaysHow: `capture layers 0,1 --what residual`, run,
// then `dump D --format speculators` was refused with "speculators files
// hold the residual stream; the layers are captured as residual", which
// says neither what the file needs nor how to get it. The refusal names
// the stream and both ways on (`--what stream`, or hsdb's own dump);
// --what stream plans.
func TestPlanCapturedWhatSaysHow(t *testing.T) {
	specs := []CaptureSpec{{Site: "model.layers.0", Tensor: "residual", Layer: 0, Key: "hidden_states.0"}, {Site: "model.layers.1", Tensor: "residual", Layer: 1, Key: "hidden_states.1"}}
	for _, f := range []Format{FormatSpeculators, FormatSpecForge} {
		_, err := PlanCaptured(f, specs, "residual", 4)
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("%s: %v, want ErrFormat", f, err)
		}
		for _, want := range []string{"hidden_states + residual", "--what stream", "`dump DIR` without --format"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q lacks %q", f, err, want)
			}
		}
	}
	stream := []CaptureSpec{{Site: "model.layers.0", Tensor: "stream", Layer: 0, Key: "hidden_states.0"}}
	if _, err := PlanCaptured(FormatSpeculators, stream, "stream", 4); err != nil {
		t.Errorf("--what stream: %v", err)
	}
}
