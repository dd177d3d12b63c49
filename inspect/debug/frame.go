package debug

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// frameCtx is st seen from `bt` level level (1 the outermost module with a
// site) of an enclosing module that has not returned yet: its site, and as
// tensors its inputs on every rank ("input", and "input_residual" for a
// decoder layer's second input, vLLM's residual), replicated as every
// enclosing block's inputs are. The module's own outputs do not exist yet.
func frameCtx(st *stopCtx, level int) *stopCtx {
	f := st.views[0].Frames[level-1]
	ev := &model.Event{Site: f.Site, Step: st.ev.Step, Batch: st.ev.Batch}
	out := &stopCtx{ev: ev, key: st.key, info: st.info}
	for _, v := range st.views {
		fv := &model.RankView{Rank: v.Rank, World: v.World, Device: v.Device, Frames: v.Frames[:level]}
		for i, t := range v.Frames[level-1].In {
			name := "input"
			if i > 0 {
				name = "input_residual"
			}
			fv.Tensors = append(fv.Tensors, model.SiteTensor{Name: name, T: t, Shard: model.Sharding{Kind: model.Replicated}})
		}
		out.views = append(out.views, fv)
	}
	return out
}

// innermost returns the `bt` level of the stopped site.
func innermost(st *stopCtx) int {
	fs := st.views[0].Frames
	if n := len(fs); n > 0 && fs[n-1].Site == st.ev.Site {
		return n
	}
	return len(fs) + 1
}

// SelectFrame makes the queries (print, hist, top, ranks, save, compare,
// set var) look at `bt` level level: the stopped site (its own level,
// the deepest), or an enclosing module, whose tensors are its inputs
// (frameCtx). It returns the frame with Outputs naming the tensors the
// queries now see. Errors: ErrNotStopped, a level outside 1..the stopped
// site's (0 is the root model object, which has no site).
func (s *Session) SelectFrame(level int) (client.Frame, error) {
	if s.job == nil || s.job.stop == nil {
		return client.Frame{}, fmt.Errorf("frame: %w", client.ErrNotStopped)
	}
	st := s.job.stop
	in := innermost(st)
	if level < 1 || level > in {
		return client.Frame{}, fmt.Errorf("frame %d: want 1 (outermost module) to %d (the stopped site %s); 0 is the root, which has no site", level, in, st.ev.Site.Path)
	}
	if level == in {
		s.frame = 0
	} else {
		s.frame = level
	}
	return s.CurrentFrame()
}

// CurrentFrame returns the frame the queries look at (see SelectFrame).
func (s *Session) CurrentFrame() (client.Frame, error) {
	var fr client.Frame
	err := s.at(func(st *stopCtx) error {
		level := s.frame
		if level == 0 {
			level = innermost(st)
		}
		fr = client.Frame{Level: level, Class: st.ev.Site.Class, Site: st.ev.Site.Path}
		for _, v := range st.views {
			var in [][]int
			if level-1 < len(v.Frames) && v.Frames[level-1].Site == st.ev.Site {
				in = v.Frames[level-1].Inputs
			}
			fr.Inputs = append(fr.Inputs, in)
			fr.Outputs = append(fr.Outputs, shapesOf(v))
		}
		return nil
	})
	return fr, err
}
