package capture

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
)

// TestCaptureTruncatedLoadNorm: `hsdb capture --load-layers 0-1 --format
// specforge` on a 3-layer model wrote SpecForge's hidden_state from
// model.norm applied to layer 1's output, labelled HF
// output_hidden_states[3], exit 0: not the model's final hidden state
// (checked here against the full model, so the refusal hides no harmless
// case). model.norm (and what follows the layers) is now refused from a
// load short of the last layer, by the Capturer and before the load
// (LoadRangeFits), as is a captured layer outside the range; a load
// through the last layer still captures it.
func TestCaptureTruncatedLoadNorm(t *testing.T) {
	const dir = "../../testdata/hf/llama" // num_hidden_layers 3
	site, name, _ := strings.Cut(NormKey, ":")
	open := func(r *model.LayerRange) *engine.Engine {
		e, err := engine.Open(dir, engine.Options{Layers: r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	normOut := func(e *engine.Engine) []float32 {
		h := &tensorCopy{site: site, name: name}
		if _, err := e.Prefill([][]int32{{1, 5, 7, 9}}, h, false); err != nil {
			t.Fatal(err)
		}
		if h.got == nil {
			t.Fatalf("no %s at %s", name, site)
		}
		return h.got
	}
	full, short, through := open(nil), open(&model.LayerRange{First: 0, Last: 1}), open(&model.LayerRange{First: 0, Last: 2})
	want, wrong := normOut(full), normOut(short)
	differ := len(want) != len(wrong)
	for i := 0; !differ && i < len(want); i++ {
		differ = want[i] != wrong[i]
	}
	if len(want) == 0 || !differ {
		t.Fatal("model.norm of --load-layers 0-1 equals the full model's: the premise of the refusal is wrong")
	}
	err := NewCapturer(short.Tree, short.Dims.Layers).AddSite(site, name)
	if !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "--load-layers 0-1") || !strings.Contains(err.Error(), "model.norm follows layer 1's output instead of layer 2's") {
		t.Errorf("AddSite(%s) at --load-layers 0-1: %v, want a refusal naming the flag and the layers", site, err)
	}
	if err := NewCapturer(through.Tree, through.Dims.Layers).AddSite(site, name); err != nil {
		t.Errorf("AddSite(%s) at --load-layers 0-2 (through the last layer): %v", site, err)
	}
	p, err := PlanLayers(FormatSpecForge, "0,1,2", 3, parseInts)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    model.LayerRange
		want string
	}{
		{model.LayerRange{First: 0, Last: 1}, "layer 2 is not loaded (--load-layers 0-1)"},
		{model.LayerRange{First: 1, Last: 2}, "layer 1 receives the embeddings"},
	} {
		if err := LoadRangeFits(p, c.r, 3); !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadRangeFits(specforge 0,1,2, %s): %v, want %q", c.r, err, c.want)
		}
	}
	p01, err := PlanLayers(FormatHsdb, "0,1", 3, parseInts)
	if err != nil {
		t.Fatal(err)
	}
	if err := LoadRangeFits(p01, model.LayerRange{First: 0, Last: 1}, 3); err != nil {
		t.Errorf("hsdb layers 0,1 from --load-layers 0-1: %v", err)
	}
	pn := &Plan{Format: FormatSpecForge, Srcs: []Source{{Layer: 0}, {Layer: -1, Norm: true}}}
	if err := LoadRangeFits(pn, model.LayerRange{First: 0, Last: 1}, 3); !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "model.norm follows layer 1's output instead of layer 2's") {
		t.Errorf("LoadRangeFits(norm, 0-1): %v", err)
	}
}

// tensorCopy is an independent hook: rank 0's tensor name at one site,
// copied to the host.
type tensorCopy struct {
	site, name string
	got        []float32
}

func (h *tensorCopy) Want(ev *model.Event) bool { return ev.Site.Path == h.site }

func (h *tensorCopy) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, st := range ranks[0].Tensors {
		if st.Name == h.name {
			s := st.T.Shape()
			h.got = ranks[0].Device.ToHost(st.T, 0, s[0], 0, s[1]).ToF32()
		}
	}
	return nil
}
