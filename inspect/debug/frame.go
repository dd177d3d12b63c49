package debug

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// frameCtx is st seen from depth level (1 the outermost module with a
// site, counting inward; `bt` numbers frames the other way, see gdbLevel) of an enclosing module that has not returned yet: its site, and as
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

// innermost returns the depth of the stopped site: 1 for the outermost
// module with a site, counting inward (0 is the root model object).
func innermost(st *stopCtx) int {
	fs := st.views[0].Frames
	if n := len(fs); n > 0 && fs[n-1].Site == st.ev.Site {
		return n
	}
	return len(fs) + 1
}

// SelectFrame makes the queries (print, hist, top, ranks, save, compare,
// set var) look at `bt` level level, numbered as gdb numbers frames: 0 the
// stopped site, 1 the module enclosing it, and so on outward; an enclosing
// module's tensors are its inputs (frameCtx). It returns the frame with
// Outputs naming the tensors the queries now see. Errors: ErrNotStopped, a
// level outside 0..the outermost module with a site (the level above it is
// the root model object, which has no site).
func (s *Session) SelectFrame(level int) (client.Frame, error) {
	if s.job == nil || s.job.stop == nil {
		return client.Frame{}, fmt.Errorf("%w: `run` to a breakpoint first", client.ErrNotStopped) // the caller names the command
	}
	st := s.job.stop
	in := innermost(st)
	if level < 0 || level > in-1 {
		outer := st.ev.Site.Path
		if fs := st.views[0].Frames; len(fs) > 0 {
			outer = fs[0].Site.Path
		}
		return client.Frame{}, fmt.Errorf("frame %d: want 0 (the stopped site %s) to %d (%s); %d is the root, which has no site",
			level, st.ev.Site.Path, in-1, outer, in)
	}
	if level == 0 {
		s.frame = 0
	} else {
		s.frame = in - level // depth
	}
	return s.CurrentFrame()
}

// CurrentFrame returns the frame the queries look at (see SelectFrame).
func (s *Session) CurrentFrame() (client.Frame, error) {
	var fr client.Frame
	err := s.at(func(st *stopCtx) error {
		level := s.frame // depth
		if level == 0 {
			level = innermost(st)
		}
		fr = client.Frame{Level: innermost(s.job.stop) - level, Class: st.ev.Site.Class, Site: st.ev.Site.Path}
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
