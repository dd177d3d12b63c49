package debug

import (
	"errors"
	"slices"
	"testing"

	"hsdb/inspect/client"
)

// TestObserversSeeEveryPass: an observer hook sees its site once per pass
// with the same values an independent hook records, also when the pass
// stops at a breakpoint on that very site first; Borrow refuses while a
// pass is stopped and afterwards `gen` needs a new run.
func TestObserversSeeEveryPass(t *testing.T) {
	s := newSession(t, 2)
	obs := &siteCopy{site: "model.layers.2"}
	s.Observers = append(s.Observers, obs)
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.2")(s.Run())
	if len(obs.got["stream"]) != 2 {
		t.Fatalf("observer saw %d ranks of stream at the stop", len(obs.got["stream"]))
	}
	if err := s.Borrow(func() error { return nil }); !errors.Is(err, client.ErrBusy) {
		t.Fatalf("borrow while stopped: %v", err)
	}
	if o, err := s.Continue(); err != nil || o.Done == nil {
		t.Fatalf("continue: %+v %v", o, err)
	}
	ref := reference(t, 2, "model.layers.2")
	for r, x := range obs.got["stream"] {
		if !slices.Equal(x.F32(), ref["stream"][r].F32()) {
			t.Fatalf("rank %d: the observer's stream differs from an independent run's", r)
		}
	}
	ran := false
	if err := s.Borrow(func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("borrow: %v", err)
	}
	if _, err := s.Gen(1); err == nil {
		t.Fatal("gen after a borrow continued the borrowed sequences")
	}
}
