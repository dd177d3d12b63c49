package debug

import (
	"hsdb/inspect/client"
	"strings"
	"testing"
)

// TestTraceStopsAtInterrupt: with tracing on, no trace line reaches OnTrace
// after Interrupt (the pass may run a few sites ahead of the printer, and
// the stop site itself is shown by the stop); the pass stops with reason
// "interrupted", and tracing resumes with the next command.
func TestTraceStopsAtInterrupt(t *testing.T) {
	s := newSession(t, 2)
	s.SetTrace(true)
	n, after, interrupted := 0, 0, false
	s.OnTrace = func(client.TraceLine) {
		n++
		if interrupted {
			after++
		}
		if n == 5 {
			interrupted = s.Interrupt()
		}
	}
	o, err := s.Run()
	if err != nil || o.Stop == nil || strings.Join(o.Stop.Reasons, ";") != "interrupted" {
		t.Fatalf("run: %+v %v", o, err)
	}
	if !interrupted || after != 0 {
		t.Fatalf("interrupt at trace line 5 (ok %v): %d more lines traced", interrupted, after)
	}
	before := n
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	if n != before+1 {
		t.Fatalf("step after the interrupt traced %d lines, want 1", n-before)
	}
}
