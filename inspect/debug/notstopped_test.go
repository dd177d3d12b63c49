package debug

import (
	"errors"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestResumeNotStoppedHint: step, next, finish and until without a
// stopped pass say what to do, as continue and the queries do ("`run` to a
// breakpoint first"), not the bare sentinel.
func TestResumeNotStoppedHint(t *testing.T) {
	s := newSession(t, 1)
	for name, f := range map[string]func() (*client.Outcome, error){
		"step":   s.Step,
		"next":   s.Next,
		"finish": s.Finish,
		"until":  func() (*client.Outcome, error) { return s.Until("layers.1") },
	} {
		_, err := f()
		if !errors.Is(err, client.ErrNotStopped) || !strings.Contains(err.Error(), "`run` to a breakpoint first") {
			t.Errorf("%s without a stop: %v", name, err)
		}
	}
}
