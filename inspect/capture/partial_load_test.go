package capture

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
)

// TestCapturePartialLoad: `hsdb capture --load-layers 1-2
// --layers 2` wrote a dump labelled "HF output_hidden_states[3]" whose
// values were not the model's: with layers 1-2 loaded, layer 1 receives
// the embeddings instead of layer 0's output. The values differ from the
// full model's layer 2 (checked here, so the refusal is not hiding a
// harmless case), and capturing from such a load is refused, naming the
// flag; a load from layer 0 still captures, equal to the full model.
func TestCapturePartialLoad(t *testing.T) {
	const dir = "../../testdata/hf/llama"
	ids := [][]int32{{1, 5, 7, 9}}
	layer := func(e *engine.Engine, l int) []float32 {
		h := &streamCopy{site: fmt.Sprintf("model.layers.%d", l)}
		if _, err := e.Prefill(ids, h, false); err != nil {
			t.Fatal(err)
		}
		if h.got == nil {
			t.Fatalf("no stream at %s", h.site)
		}
		return h.got
	}
	open := func(r *model.LayerRange) *engine.Engine {
		e, err := engine.Open(dir, engine.Options{Layers: r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	full, from1, from0 := open(nil), open(&model.LayerRange{First: 1, Last: 2}), open(&model.LayerRange{First: 0, Last: 1})
	want, wrong, right := layer(full, 1), layer(from1, 1), layer(from0, 1)
	same := func(a, b []float32) bool {
		if len(a) != len(b) || len(a) == 0 {
			return false
		}
		for i := range a {
			if !(a[i] == b[i]) {
				return false
			}
		}
		return true
	}
	if same(want, wrong) {
		t.Fatal("layer 1 of --load-layers 1-2 equals the full model's: the premise of the refusal is wrong")
	}
	if !same(want, right) {
		t.Fatal("layer 1 of --load-layers 0-1 differs from the full model's")
	}
	c := NewCapturer(from1.Tree, from1.Dims.Layers)
	for what, err := range map[string]error{"AddLayers": c.AddLayers([]int{2}, WhatStream), "AddSite": c.AddSite("model.layers.2", "stream")} {
		if !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "--load-layers 1-2") {
			t.Errorf("%s on a --load-layers 1-2 model: %v, want a refusal naming the flag", what, err)
		}
	}
	if err := NewCapturer(from0.Tree, from0.Dims.Layers).AddLayers([]int{0, 1}, WhatStream); err != nil {
		t.Errorf("capture from --load-layers 0-1: %v", err)
	}
}

// streamCopy is an independent hook: rank 0's stream at one site, copied
// to the host.
type streamCopy struct {
	site string
	got  []float32
}

func (h *streamCopy) Want(ev *model.Event) bool { return ev.Site.Path == h.site }

func (h *streamCopy) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, st := range ranks[0].Tensors {
		if st.Name == "stream" {
			s := st.T.Shape()
			h.got = ranks[0].Device.ToHost(st.T, 0, s[0], 0, s[1]).ToF32()
		}
	}
	return nil
}
