package debug

import (
	"testing"

	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// TestEditAtStopUnderGatherRows: an edit at a stop records the stopped
// site again (Capturer.Revisit), replacing this step's rows; under
// gather-rows a step records world·len rows [2·4, 64/2], but Revisit kept
// all but len of them, so each edit grew the capture by len rows (12 for
// 4 tokens at tp 2, not the fault's 8). stream[0, 0] = 1 is rank 0's shard,
// row 0, column 0: the gathered-along-rows tensor's first value.
func TestEditAtStopUnderGatherRows(t *testing.T) {
	s, l := capturingSession(t, 2, []int{1})
	if err := l.Inject(client.Fault{Kind: capture.FaultGatherRows, Rank: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.1", "", false); err != nil {
		t.Fatal(err)
	}
	if o, err := l.Run(); err != nil || o.Stop == nil {
		t.Fatalf("run: %+v, %v; want a stop at layers.1", o, err)
	}
	for range 2 { // two edits at the one stop
		if _, err := s.SetVar(client.EditRequest{Tensor: "stream", Index: mustIndex(t, "0, 0"), HasIndex: true, Slice: client.All, Op: "=", Value: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Continue(); err != nil {
		t.Fatal(err)
	}
	seqs, _, err := l.capturer().Result()
	if err != nil || len(seqs) != 1 {
		t.Fatalf("result: %d sequences, %v", len(seqs), err)
	}
	x := seqs[0].Tensors["hidden_states.1"]
	if x == nil || x.Rows() != 8 || x.Cols() != 32 || x.F32()[0] != 1 {
		t.Fatalf("hidden_states.1 under gather-rows after two edits: %v, want [8, 32] with the edited 1 first", x)
	}
}

// mustIndex parses an index as set var's brackets hold it.
func mustIndex(t *testing.T, s string) client.Index {
	t.Helper()
	ix, err := client.ParseIndex(s)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}
