package debug

import (
	"slices"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

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
	if err := l.CaptureLayers([]int{3}, capture.WhatStream); err != nil {
		t.Fatal(err)
	}
	h3 := func() ([]float32, []string) {
		t.Helper()
		seqs, _, err := l.capturer().Result()
		if err != nil || len(seqs) != 1 || seqs[0].Tensors["hidden_states.3"] == nil {
			t.Fatalf("result: %v, %v", seqs, err)
		}
		return slices.Clone(seqs[0].Tensors["hidden_states.3"].F32()), l.capturer().Under()
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	clean, _ := h3()
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
	got, under := h3()
	if len(clean) == 0 || !slices.Equal(got, clean) || len(under) != 0 {
		t.Errorf("the pass stopped when the fault was injected: layer 3 equals the clean pass: %v, noted under %v; want true and none", slices.Equal(got, clean), under)
	}
	if err := s.Delete(b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	got, under = h3()
	want := make([]float32, len(clean))
	for i, v := range clean {
		want[i] = 2 * v
	}
	if !slices.Equal(got, want) || !slices.Equal(under, []string{"scale-residual 2"}) {
		t.Errorf("the next run: layer 3 is 2 × clean: %v, under %v; want true and [scale-residual 2]", slices.Equal(got, want), under)
	}
}
