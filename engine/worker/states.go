package worker

import (
	"io"

	"hsdb/engine"
)

// exitedFault marks a spawned worker that has exited as failed (its
// exit status in the report): its wait has returned, or Linux shows it
// gone or a zombie (its wait then returns at once, and the fault takes
// the status from it). It never waits on a live worker.
func (r *remoteRank) exitedFault() {
	if p := r.proc; p != nil && r.failed() == nil {
		select {
		case <-p.exited:
			r.fault(io.EOF)
		default:
			if procGone(p.cmd.Process.Pid) {
				r.fault(io.EOF)
			}
		}
	}
}

// deadPeer returns the fault report of a spawned worker other than r
// that has died, or nil. A worker aborted by its link to a dead peer
// (direct links: "the link to slot 3 ended") may answer before the front
// has talked to the dead one, and its abort would be the step's only
// error; the dead worker is the cause, named with its rank, stage and how
// it ended, as when the front finds it itself.
func (f *Front) deadPeer(r *remoteRank) error {
	f.mu.Lock()
	slots := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	for _, o := range slots {
		if o == nil || o == r {
			continue
		}
		o.exitedFault()
		if err := o.failed(); err != nil {
			return err
		}
	}
	return nil
}

// States returns every worker as `info ranks` shows it
// (engine.Workers.States), in slot order, without waiting on any: a
// spawned worker that has exited is marked failed here, and one the OS
// shows stopped (SIGSTOP) is "stopped by a signal". A worker that joined
// by itself and died is known only once the front next talks to it.
func (f *Front) States() []engine.WorkerState {
	f.mu.Lock()
	slots := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	var out []engine.WorkerState
	for _, r := range slots {
		if r == nil {
			continue
		}
		r.exitedFault()
		st := engine.WorkerState{Rank: r.rank, Stage: r.stage, PID: r.pid, Host: r.host}
		f.intr.mu.Lock()
		busy := r.busy
		f.intr.mu.Unlock()
		r.mu.Lock()
		dead, open, ev, last := r.dead, r.open, r.openEv, r.lastSite
		r.mu.Unlock()
		switch {
		case dead != nil:
			st.State, st.Reason = "failed", dead.Error()
		case r.proc != nil && procStopped(r.proc.cmd.Process.Pid):
			st.State, st.Site = "stopped by a signal", last
		case open && ev != nil:
			st.State, st.Site = "at a stop", ev.Site.Path
		case busy:
			st.State, st.Site = "running", last
		default:
			st.State = "idle"
		}
		out = append(out, st)
	}
	return out
}

// stoppedWorker is the fault of a spawned worker that Linux shows stopped
// by a signal (SIGSTOP, a debugger) when a step begins: it cannot run the
// step, which would otherwise wait out the worker timeout and fail, so
// the front ends it (SIGKILL also ends a stopped process) and starts a
// fresh one with the usual report.
type stoppedWorker struct{}

func (stoppedWorker) Error() string {
	return "stopped by a signal (SIGSTOP?) when a step began, so it could not run it: killed"
}

// Replaced returns, and forgets, a line per worker that a prefill's Begin
// replaced since the last call (engine.Workers.Replaced): its rank and
// the fault it was ended for.
func (f *Front) Replaced() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.replaced
	f.replaced = nil
	return r
}
