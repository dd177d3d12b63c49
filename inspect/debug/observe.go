package debug

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// passHook is the hook a pass runs: the session's observers, then the
// debugger's own hook. It reads Observers at every site, so observers added
// while a pass is stopped see the sites after the stop. The debugger's Want
// is always asked, since it records how far the ranks have got.
func (s *Session) passHook() model.Hook { return observed{s} }

type observed struct{ s *Session }

// Want asks the debugger's hook first (always), then the observers.
func (o observed) Want(ev *model.Event) bool {
	want := hook{o.s}.Want(ev) || o.s.wantsEdit(ev)
	for _, h := range o.s.Observers {
		if h.Want(ev) {
			return true
		}
	}
	return want
}

// Visit runs the observers that want the site, then the debugger's hook
// (which may stop the pass there).
func (o observed) Visit(ev *model.Event, views []*model.RankView) error {
	if o.s.wantsEdit(ev) {
		if err := o.s.applyPending(ev, views); err != nil {
			return err
		}
	}
	for _, h := range o.s.Observers {
		if h.Want(ev) {
			if err := h.Visit(ev, views); err != nil {
				return err
			}
		}
	}
	if dbg := (hook{o.s}); dbg.Want(ev) {
		return dbg.Visit(ev, views)
	}
	return nil
}

// Borrow runs fn, which runs forward passes of its own on s.E (the layer
// matching of `check` and `diff`), when no pass of the session is stopped:
// the engine runs one pass at a time. fn's prefills replace the engine's
// sequences, so afterwards `gen` needs a new `run`. Errors: ErrBusy while a
// pass is stopped, or fn's.
func (s *Session) Borrow(fn func() error) error {
	if s.job != nil {
		return fmt.Errorf("%w: finish it (continue) or start over (run) first", client.ErrBusy)
	}
	s.next = nil
	return fn()
}
