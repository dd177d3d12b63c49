package debug

import (
	"math"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// TestInjectRowPastSequence: inject nan-at with a --token past a
// sequence's length, a --channel past hidden_size, or shift-rows by at
// least a sequence's length was accepted, and the capturer then skipped
// the NaN or repeated one token in every row, while the dump's manifest
// listed the fault: one error now names the row (or shift) and the
// sequence's length, at inject for the batch given so far and at run for
// a batch given after the fault. stories260K's hidden_size is 64 (its
// config.json's dim).
func TestInjectRowPastSequence(t *testing.T) {
	e, err := engine.Open("", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	l := NewLocal(New(e))
	if err := l.SetBatch([][]int32{{1, 403, 407, 261}, {1, 400}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    client.Fault
		want string
	}{
		{client.Fault{Kind: capture.FaultNaNAt, Rank: -1, Token: 2}, "token 2 is past sequence 1, which has 2 tokens (rows 0..1)"},
		{client.Fault{Kind: capture.FaultNaNAt, Rank: -1, Token: 9, Channel: 3}, "token 9 is past sequence 1, which has 2 tokens"},
		{client.Fault{Kind: capture.FaultNaNAt, Rank: -1, Token: 1, Channel: 64}, "--channel 64: a layer's row has hidden_size 64 channels (0..63)"},
		{client.Fault{Kind: capture.FaultShiftRows, Rank: -1, Value: 2}, "sequence 1 has 2 tokens: a shift of 2 rows moves every row past its end"},
		{client.Fault{Kind: capture.FaultShiftRows, Rank: -1, Value: -7}, "sequence 1 has 2 tokens: a shift of 7 rows"},
	} {
		if err := l.Inject(c.f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("inject %+v: %v, want an error saying %q", c.f, err, c.want)
		}
	}
	if fs, _ := l.Faults(); len(fs) != 0 {
		t.Fatalf("refused faults were kept: %v", fs)
	}
	// Within every sequence: accepted; then a batch with a one-token
	// sequence is refused at run, naming it.
	for _, f := range []client.Fault{{Kind: capture.FaultNaNAt, Rank: -1, Token: 1, Channel: 63}, {Kind: capture.FaultShiftRows, Rank: -1, Value: -1}} {
		if err := l.Inject(f); err != nil {
			t.Fatalf("inject %+v: %v", f, err)
		}
	}
	if err := l.SetBatch([][]int32{{1, 403, 407, 261}, {1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(); err == nil || !strings.Contains(err.Error(), "token 1 is past sequence 1, which has 1 token (rows 0..0)") {
		t.Errorf("run with a one-token sequence under nan-at --token 1: %v", err)
	}
}

// TestNaNAtNotInDecodeRows: nan-at records a NaN at a position of each
// sequence, but a decode step's one row per sequence was taken for its
// token 0, so nan-at --token 0 put a NaN in every generated row too (3
// NaN in a 2-token prompt and 2 gen steps). Only row 0, channel 5 is NaN.
func TestNaNAtNotInDecodeRows(t *testing.T) {
	e, err := engine.Open("", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	l := NewLocal(New(e))
	if err := l.SetBatch([][]int32{{1, 403}}); err != nil {
		t.Fatal(err)
	}
	if err := l.CaptureLayers([]int{1}, capture.WhatStream); err != nil {
		t.Fatal(err)
	}
	if err := l.Inject(client.Fault{Kind: capture.FaultNaNAt, Rank: -1, Token: 0, Channel: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Gen(2); err != nil {
		t.Fatal(err)
	}
	seqs, _, err := l.capturer().Result()
	if err != nil || len(seqs) != 1 {
		t.Fatalf("result: %d sequences, %v", len(seqs), err)
	}
	x := seqs[0].Tensors["hidden_states.1"]
	if x == nil || x.Rows() != 4 || x.Cols() != 64 {
		t.Fatalf("hidden_states.1: %v, want [4, 64] (2 prompt tokens + 2 generated)", x)
	}
	for i, v := range x.F32() {
		if nan := math.IsNaN(float64(v)); nan != (i == 5) {
			t.Errorf("row %d channel %d: %v; want NaN at row 0 channel 5 alone", i/64, i%64, v)
		}
	}
}
