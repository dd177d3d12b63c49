package debug

import (
	"slices"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// TestInjectAtStopTakesNextStep: the engine takes its computation faults
// when a step starts, but a recording fault injected at a stop was applied
// at once: a pass stopped at layer 1 then recorded layer 2 scaled by 2 and
// layer 1 not, one file holding two regimes. It now applies from the next
// step, as computation faults do: the stopped pass finishes as it began
// (layer 2 as in a clean pass, nothing noted under faults), and the next
// run records layer 2 scaled by 2 (by hand: 2 × the clean values).
func TestInjectAtStopTakesNextStep(t *testing.T) {
	e, err := engine.Open("", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := New(e)
	l := NewLocal(s)
	if err := l.SetBatch([][]int32{{1, 403, 407, 261}}); err != nil {
		t.Fatal(err)
	}
	if err := l.CaptureLayers([]int{1, 2}, capture.WhatStream); err != nil {
		t.Fatal(err)
	}
	h2 := func() ([]float32, []string) {
		t.Helper()
		seqs, _, err := l.capturer().Result()
		if err != nil || len(seqs) != 1 || seqs[0].Tensors["hidden_states.2"] == nil {
			t.Fatalf("result: %v, %v", seqs, err)
		}
		return slices.Clone(seqs[0].Tensors["hidden_states.2"].F32()), l.capturer().Under()
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	clean, _ := h2()
	b, err := s.Break("layers.1", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := l.Run(); err != nil || o.Stop == nil {
		t.Fatalf("run: %+v, %v; want a stop", o, err)
	}
	if err := l.Inject(client.Fault{Kind: capture.FaultScaleResidual, Rank: -1, Value: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Continue(); err != nil {
		t.Fatal(err)
	}
	got, under := h2()
	if !slices.Equal(got, clean) || len(under) != 0 {
		t.Errorf("the pass stopped when the fault was injected: layer 2 differs from the clean pass (%v) or is noted under %v; want it clean", !slices.Equal(got, clean), under)
	}
	if err := s.Delete(b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	got, under = h2()
	want := make([]float32, len(clean))
	for i, v := range clean {
		want[i] = 2 * v
	}
	if len(clean) == 0 || !slices.Equal(got, want) || !slices.Equal(under, []string{"scale-residual 2"}) {
		t.Errorf("the next run: layer 2 is 2 × clean: %v, under %v; want true and [scale-residual 2]", slices.Equal(got, want), under)
	}
}
