package debug

import (
	"fmt"
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
	injectAtStopNextStep(t, []int{1, 2}, 2)
}

// injectAtStopNextStep runs the scenario of TestInjectAtStopTakesNextStep
// and TestInjectAtStopBeforeCapturedSite on the default model at tp 1:
// capture the stream at capLayers, a clean run, then break at layers.1,
// inject scale-residual 2 at the stop and continue: layer layer is as in
// the clean pass, nothing noted under faults; the next run records it 2 ×
// the clean values, under [scale-residual 2].
func injectAtStopNextStep(t *testing.T, capLayers []int, layer int) {
	t.Helper()
	s, l := capturingSession(t, 1, capLayers)
	key := fmt.Sprintf("hidden_states.%d", layer)
	hl := func() ([]float32, []string) {
		t.Helper()
		seqs, _, err := l.capturer().Result()
		if err != nil || len(seqs) != 1 || seqs[0].Tensors[key] == nil {
			t.Fatalf("result: %v, %v", seqs, err)
		}
		return slices.Clone(seqs[0].Tensors[key].F32()), l.capturer().Under()
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	clean, _ := hl()
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
	got, under := hl()
	if len(clean) == 0 || !slices.Equal(got, clean) || len(under) != 0 {
		t.Errorf("the pass stopped when the fault was injected: layer %d equals the clean pass: %v, noted under %v; want true and none", layer, slices.Equal(got, clean), under)
	}
	if err := s.Delete(b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	got, under = hl()
	want := make([]float32, len(clean))
	for i, v := range clean {
		want[i] = 2 * v
	}
	if !slices.Equal(got, want) || !slices.Equal(under, []string{"scale-residual 2"}) {
		t.Errorf("the next run: layer %d is 2 × clean: %v, under %v; want true and [scale-residual 2]", layer, slices.Equal(got, want), under)
	}
}

// capturingSession opens the default model at tp, sets the batch
// {1, 403, 407, 261} and captures the stream at layers.
func capturingSession(t *testing.T, tp int, layers []int) (*Session, *Local) {
	t.Helper()
	e, err := engine.Open("", engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := New(e)
	l := NewLocal(s)
	if err := l.SetBatch([][]int32{{1, 403, 407, 261}}); err != nil {
		t.Fatal(err)
	}
	if err := l.CaptureLayers(layers, capture.WhatStream); err != nil {
		t.Fatal(err)
	}
	return s, l
}
