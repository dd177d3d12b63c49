package debug

import (
	"hsdb/inspect/client"
)

// Backtrace returns the call chain at the stop innermost first, numbered
// as gdb numbers frames: level 0 the stopped site, then every module
// entered and not yet returned, counting outward, and last the root
// module (LlamaForCausalLM, which has no site).
func (s *Session) Backtrace() ([]client.Frame, error) {
	var out []client.Frame
	err := s.atStop(func(st *stopCtx) error {
		out = append(out, client.Frame{Level: 0, Class: s.E.Tree.Root.Class})
		v0 := st.views[0]
		for i, f := range v0.Frames {
			fr := client.Frame{Level: i + 1, Class: f.Site.Class, Site: f.Site.Path}
			for _, v := range st.views {
				var in [][]int
				if i < len(v.Frames) {
					in = v.Frames[i].Inputs
				}
				fr.Inputs = append(fr.Inputs, in)
			}
			out = append(out, fr)
		}
		last := &out[len(out)-1]
		if last.Site != st.ev.Site.Path {
			out = append(out, client.Frame{Level: len(out), Class: st.ev.Site.Class, Site: st.ev.Site.Path})
			last = &out[len(out)-1]
		}
		staged := false
		for r, v := range st.views {
			last.Outputs = append(last.Outputs, shapesOf(v))
			last.Devices = append(last.Devices, v.Device.Name())
			staged = staged || v.Device.Name() != s.E.Device(r).Name()
		}
		if !staged {
			last.Devices = nil
		}
		// Built outermost first (depth d); gdb's level is len-1-d.
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		for i := range out {
			out[i].Level = i
		}
		return nil
	})
	return out, err
}
