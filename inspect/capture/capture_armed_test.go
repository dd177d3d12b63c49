package capture

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine"
)

// TestCaptureArmedMidPass: `capture layers 0,1,2` while stopped
// past layer 0 of the prefill, then `gen`, failed at dump with
// "hidden_states.0 has 1 rows for 5 tokens", which does not say why. The
// capture now names the key, the sequence, the tokens it missed and the
// cause. (Layer 1 armed before the prefill, layer 0 after it: by hand,
// sequence 0 has 4 prompt tokens layer 0 never saw.)
func TestCaptureArmedMidPass(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers([]int{1}, WhatStream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prefill([][]int32{{1, 5, 7, 9}, {1, 3}}, c, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLayers([]int{0}, WhatStream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decode([]int32{4, 4}, c); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Result()
	if !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "hidden_states.0: sequence 0's first 4 tokens were not recorded") {
		t.Fatalf("Result = %v, want the armed-mid-pass error naming hidden_states.0 and sequence 0", err)
	}
}
