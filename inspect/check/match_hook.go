package check

import (
	"fmt"
	"math"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// target is one captured tensor being matched: its rows [rows, w] as
// float32 and the candidates compared with it so far.
type target struct {
	key      string
	label    int
	kind     string // Entry.Kind: what a trainer format claims instead of a layer
	stacked  int    // > 0: this many per-token entries stacked into rows
	regather int    // > 0: this many row blocks put side by side (regathered)
	dtype    tensor.DType
	x        []float32
	rows, w  int
	accs     []*rowAcc
	// cond is what is wrong with the values alone (valueCondition); skip
	// is set with it: no explanation is looked for.
	cond string
	skip bool
}

// matchHook compares targets with hsdb's tensors while a forward pass runs:
// the embeddings, every decoder layer's hidden_states, residual and stream,
// model.norm's output (the normed stream of normOf, the last loaded
// layer: the model's last layer unless --load-layers stops short) and, for chosen
// layers, their streams normed with the final norm's weight (estimated at
// model.norm by least squares from its input and output). With anySite it
// also compares every other site tensor whose width fits a target.
type matchHook struct {
	layers  int
	normOf  int // the decoder layer whose output model.norm normalizes (normLayer)
	hidden  int
	tp      int
	targets []*target
	anySite bool
	normFor map[int]bool           // layers whose normed stream is a candidate
	xhat    map[int]*tensor.Tensor // their RMS-normalized streams (no weight)
	err     error
}

func isLayerOutput(s *model.Site) bool {
	return s.Layer >= 0 && s.Path == fmt.Sprintf("model.layers.%d", s.Layer)
}

// Want asks for the prefill's embeddings, layer outputs and final norm
// (every site with anySite), the same on every rank.
func (h *matchHook) Want(ev *model.Event) bool {
	if ev.Step != 0 || h.err != nil {
		return false
	}
	s := ev.Site
	return h.anySite || isLayerOutput(s) || s.Path == "model.embed_tokens" || s.Path == "model.norm"
}

// Visit gathers the candidates of the site and compares them with the
// targets; a gather failure is kept in h.err and ends the matching.
func (h *matchHook) Visit(ev *model.Event, ranks []*model.RankView) error {
	s := ev.Site
	gather := func(name string) *tensor.Tensor {
		g, err := capture.GatherSite(s.Path, name, ranks)
		if err != nil {
			if h.err == nil {
				h.err = err
			}
			return nil
		}
		if g.T.DType != tensor.F32 {
			return nil
		}
		return g.T
	}
	done := map[string]bool{}
	switch {
	case s.Path == "model.embed_tokens":
		if t := gather("hidden_states"); t != nil {
			h.offer(Candidate{Kind: CandEmbed, Layer: -1, Site: s.Path, Tensor: "hidden_states"}, t)
		}
		done["hidden_states"] = true
	case isLayerOutput(s):
		for _, kind := range []string{CandHidden, CandResidual, CandStream} {
			t := gather(kind)
			if t == nil {
				continue
			}
			done[kind] = true
			h.offer(Candidate{Kind: kind, Layer: s.Layer, Site: s.Path, Tensor: kind, Last: s.Layer == h.layers-1}, t)
			if kind == CandStream && h.normFor[s.Layer] {
				h.xhat[s.Layer] = rmsNormalize(t)
			}
		}
	case s.Path == "model.norm":
		y := gather("hidden_states")
		if y == nil {
			break
		}
		done["hidden_states"] = true
		h.offer(Candidate{Kind: CandNormed, Layer: h.normOf, Site: s.Path, Tensor: "hidden_states", Last: h.normOf == h.layers-1}, y)
		x := gather("input")
		if x == nil {
			break
		}
		if res := gather("input_residual"); res != nil {
			xs, rs := x.F32(), res.F32()
			for i := range xs {
				xs[i] += rs[i]
			}
		}
		w := normWeight(rmsNormalize(x), y)
		for l, xh := range h.xhat {
			if l == h.normOf {
				continue
			}
			h.offer(Candidate{Kind: CandNormed, Layer: l, Site: s.Path, Tensor: "hidden_states"}, scaleCols(xh, w))
		}
	}
	if h.anySite {
		for _, st := range ranks[0].Tensors {
			if done[st.Name] || st.T == nil {
				continue
			}
			if !h.fits(fullWidth(st)) && !h.fits(st.Shape()[len(st.Shape())-1]) {
				continue
			}
			if t := gather(st.Name); t != nil {
				h.offer(Candidate{Kind: CandSite, Layer: s.Layer, Site: s.Path, Tensor: st.Name}, t)
			}
		}
	}
	return nil
}

// fullWidth is the width of a site tensor once gathered.
func fullWidth(st model.SiteTensor) int {
	if st.Shard.Kind == model.Sharded {
		return st.Shard.Full
	}
	s := st.Shape()
	return tensor.Numel(s[1:])
}

// fits reports whether some target has width w or w is a multiple of one.
func (h *matchHook) fits(w int) bool {
	for _, t := range h.targets {
		if w == t.w || (w > t.w && w%t.w == 0) {
			return true
		}
	}
	return false
}

// offer compares candidate c, whose full tensor is ref [rows, full], with
// every target of the same rows: whole when the widths agree, and column
// shard by shard when the target is narrower and divides it (world =
// full / width, or the given tp).
func (h *matchHook) offer(c Candidate, ref *tensor.Tensor) {
	if len(ref.Shape) < 2 {
		return
	}
	rows, full := ref.Shape[0], ref.Cols()
	rv := ref.F32()
	for _, t := range h.targets {
		if t.rows != rows {
			continue
		}
		switch {
		case t.w == full:
			a := newRowAcc(c, rows)
			a.add(t.x, t.w, rv, full, 0)
			t.accs = append(t.accs, a)
		case t.w < full && full%t.w == 0:
			world := full / t.w
			if h.tp > 1 && full/h.tp == t.w {
				world = h.tp
			}
			for r := range world {
				sc := c
				sc.World, sc.Rank, sc.Cols = world, r, [2]int{r * t.w, (r + 1) * t.w}
				a := newRowAcc(sc, rows)
				a.add(t.x, t.w, rv, full, r*t.w)
				t.accs = append(t.accs, a)
			}
		}
	}
}

// rmsNormalize returns x / sqrt(mean(x²)) per row (RMSNorm without its
// weight; eps is negligible against the mean square of a hidden state).
func rmsNormalize(x *tensor.Tensor) *tensor.Tensor {
	rows, cols := x.Rows(), x.Cols()
	out := tensor.New(tensor.F32, rows, cols)
	xs, o := x.F32(), out.F32()
	for r := range rows {
		var ss float64
		for _, v := range xs[r*cols : (r+1)*cols] {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(cols)+1e-30)
		for c := range cols {
			o[r*cols+c] = float32(float64(xs[r*cols+c]) * inv)
		}
	}
	return out
}

// normWeight estimates the RMSNorm weight w [cols] from normalized inputs
// xh and outputs y = xh·w by least squares per column:
// w_c = Σ_r y_rc·xh_rc / Σ_r xh_rc².
func normWeight(xh, y *tensor.Tensor) []float32 {
	rows, cols := xh.Rows(), xh.Cols()
	xs, ys := xh.F32(), y.F32()
	w := make([]float32, cols)
	for c := range cols {
		var num, den float64
		for r := range rows {
			a := float64(xs[r*cols+c])
			num += float64(ys[r*cols+c]) * a
			den += a * a
		}
		if den > 0 {
			w[c] = float32(num / den)
		}
	}
	return w
}

func scaleCols(x *tensor.Tensor, w []float32) *tensor.Tensor {
	rows, cols := x.Rows(), x.Cols()
	out := tensor.New(tensor.F32, rows, cols)
	xs, o := x.F32(), out.F32()
	for r := range rows {
		for c := range cols {
			o[r*cols+c] = xs[r*cols+c] * w[c]
		}
	}
	return out
}
