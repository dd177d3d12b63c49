package debug

import (
	"errors"
	"testing"

	"hsdb/inspect/client"
)

// TestCondition: gdb's `condition N COND` changes breakpoint N's
// condition, and `condition N` alone makes it unconditional. Facts by
// hand: stories260K's layer 2 stream has |values| of a few units, never
// 1e9, so with that condition the pass runs to the end; unconditional it
// stops there; `rank == 3` holds on no rank of a world of 2 and is
// refused, leaving the condition as it was; a condition on a tensor the
// breakpoint's site does not show is refused; a watch keeps needing one;
// an unknown number is named.
func TestCondition(t *testing.T) {
	s := newSessionOn(t, "cpu", 2)
	if err := s.SetBatch([][]int32{{1, 403, 407, 261}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Condition(1, "absmax(stream) > 1e9"); err != nil {
		t.Fatal(err)
	}
	if bp := s.Breakpoints()[0]; bp.Cond != "absmax(stream) > 1e9" {
		t.Errorf("condition %q", bp.Cond)
	}
	done(t)(s.Run())
	if err := s.Condition(1, "rank == 3"); !errors.Is(err, client.ErrRank) {
		t.Errorf("rank == 3 at world 2: %v, want ErrRank", err)
	}
	if err := s.Condition(1, "absmax(q) > 1"); !errors.Is(err, client.ErrNoTensor) {
		t.Errorf("q at a decoder layer: %v, want ErrNoTensor", err)
	}
	if bp := s.Breakpoints()[0]; bp.Cond != "absmax(stream) > 1e9" {
		t.Errorf("a refused condition changed it to %q", bp.Cond)
	}
	if err := s.Condition(1, ""); err != nil {
		t.Fatal(err)
	}
	st := stopped(t)(s.Run())
	if st.Site != "model.layers.2" {
		t.Errorf("unconditional: stopped at %s", st.Site)
	}
	if _, err := s.Watch("stream", "absmax > 5"); err != nil {
		t.Fatal(err)
	}
	if err := s.Condition(2, ""); err == nil {
		t.Errorf("a watch made unconditional")
	}
	if err := s.Condition(2, "absmax > 6"); err != nil || s.Breakpoints()[1].Cond != "absmax > 6" {
		t.Errorf("watch condition: %v, %q", err, s.Breakpoints()[1].Cond)
	}
	if err := s.Condition(7, "nan"); err == nil {
		t.Errorf("condition on breakpoint 7 (none) accepted")
	}
}
