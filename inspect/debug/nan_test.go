package debug

import (
	"math"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/tensor"
)

// TestNaNLogitsNoted: a model whose final norm weight holds a NaN runs to
// the end with a note that the next tokens mean nothing (regression: `run`
// printed "next 0" silently).
func TestNaNLogitsNoted(t *testing.T) {
	dir := enginetest.CopyHF(t, "../../testdata/hf/llama", func(name string, x *tensor.Tensor) *tensor.Tensor {
		if name != "model.norm.weight" {
			return x
		}
		c := x.Convert(tensor.F32)
		c.F32()[3] = float32(math.NaN())
		return c
	}, nil)
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := New(e)
	if err := s.SetBatch([][]int32{{1, 5, 7}}); err != nil {
		t.Fatal(err)
	}
	o, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if o.Done == nil || len(o.Done.Notes) != 1 || !strings.Contains(o.Done.Notes[0], "seq 0: the logits hold 101 NaN/Inf of 101") {
		t.Fatalf("outcome %+v", o.Done)
	}
}
