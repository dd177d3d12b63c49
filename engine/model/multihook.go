package model

// MultiHook fans a forward pass out to several hooks (a debugger's
// breakpoints, captures, a trace), as llama.cpp's eval callback serves many
// subscribers: Want is true when any hook wants the site, and Visit calls,
// in order, each hook that wanted it. The first Visit error stops the pass.
// Nil hooks are skipped.
type MultiHook []Hook

// Want reports whether any hook wants ev.
func (m MultiHook) Want(ev *Event) bool {
	for _, h := range m {
		if h != nil && h.Want(ev) {
			return true
		}
	}
	return false
}

// Visit calls Visit on each hook that wants ev.
func (m MultiHook) Visit(ev *Event, ranks []*RankView) error {
	for _, h := range m {
		if h != nil && h.Want(ev) {
			if err := h.Visit(ev, ranks); err != nil {
				return err
			}
		}
	}
	return nil
}
