package debug

import (
	"hsdb/inspect/client"
)

// Backtrace returns the call chain at the stop: the root module
// (LlamaForCausalLM), then every module entered and not yet returned, down
// to the stopped site.
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
		return nil
	})
	return out, err
}
