package worker

import (
	"fmt"
	"time"
)

// abandonGrace is how long a worker the front is waiting on has, after a
// Ctrl-C, to send anything at all before it is ended: a live worker's
// reader goroutine answers an interrupt at once, and a reply to a query
// at a stop is only late when the worker is stopped (SIGSTOP), wedged in
// a kernel or swapped out. Its state is then unknown, so it is ended and
// reported like any failed worker; the next `run` starts a fresh one.
const abandonGrace = time.Second

// abandoned is the cause of the fault of a worker ended after a Ctrl-C:
// waited is how long the front had been waiting on it; interrupt says
// whether it was a running step's interrupt it did not answer (else a
// request of the front at a stop).
// joined (set by fault) says the worker joined by itself (--listen): the
// front only disconnects it, never signalling a process of another host.
type abandoned struct {
	waited    time.Duration
	interrupt bool
	joined    bool
}

func (a abandoned) Error() string {
	end := "ended (killed), its state being unknown"
	if a.joined {
		end = "disconnected, its state being unknown (it joined by itself: end its process on its host)"
	}
	if a.interrupt {
		return fmt.Sprintf("did not answer Ctrl-C within %s (stopped by a signal, or hung in a kernel?): %s", roundWait(a.waited), end)
	}
	return fmt.Sprintf("had not answered the front's request for %s when Ctrl-C abandoned it (stopped by a signal, or hung in a kernel?): %s", roundWait(a.waited), end)
}

// roundWait rounds a wait for messages: to 0.1 s.
func roundWait(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }

// beginAsk records that the front now waits for the worker's reply to a
// request of its own (recvQueued) and returns the request's number.
func (r *remoteRank) beginAsk() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.askID++
	r.asking = time.Now()
	return r.askID
}

// endAsk records that request id got its reply (or failed).
func (r *remoteRank) endAsk(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.askID == id {
		r.asking = time.Time{}
	}
}

// silentSince reports whether the front has received nothing from the
// worker since t.
func (r *remoteRank) silentSince(t time.Time) bool {
	return r.c.heard.Load() < t.UnixNano()
}

// live returns the workers that have not failed.
func (f *Front) live() []*remoteRank {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*remoteRank
	for _, r := range f.slots {
		if r != nil && r.failed() == nil {
			out = append(out, r)
		}
	}
	return out
}

// Abandon gives up the front's requests that a worker has not answered
// (engine.Workers.Abandon): it returns a line per such worker, and ends
// as failed each that sends nothing within abandonGrace. It never blocks:
// the ending happens on a timer, and the fault closes the worker's
// connection, which wakes the command waiting for the reply with the
// fault's report.
func (f *Front) Abandon() []string {
	t0 := time.Now()
	var lines []string
	for _, r := range f.live() {
		r.mu.Lock()
		since, id := r.asking, r.askID
		r.mu.Unlock()
		if since.IsZero() {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s's worker (pid %d on %s) has not answered for %s", r.who(), r.pid, r.host, roundWait(t0.Sub(since))))
		time.AfterFunc(abandonGrace, func() {
			r.mu.Lock()
			still := r.askID == id && !r.asking.IsZero()
			r.mu.Unlock()
			if still && r.silentSince(t0) {
				r.fault(abandoned{waited: time.Since(since)})
			}
		})
	}
	return lines
}

// recvStep reads the worker's next message of a step, recording that the
// front waits on it (reading).
func (r *remoteRank) recvStep() (byte, *dec, error) {
	r.mu.Lock()
	r.reading = time.Now()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.reading = time.Time{}
		r.mu.Unlock()
	}()
	return r.c.recv(0)
}

// abandonUnreported ends, as failed, the workers that interrupt epoch
// still waits on and that have been silent for abandonGrace while the
// front was reading from them, since t0 (the interrupt). A worker whose
// step loop is busy elsewhere (waiting in the hub for another rank, whose
// end aborts that wait) is not judged: its report may sit unread. The
// check repeats until each has reported, ended its step or been ended.
func (f *Front) abandonUnreported(epoch uint64, t0 time.Time) {
	f.intr.mu.Lock()
	var late []*remoteRank
	if f.intr.epoch == epoch {
		for r := range f.intr.waiting {
			late = append(late, r)
		}
	}
	f.intr.mu.Unlock()
	again := false
	for _, r := range late {
		r.mu.Lock()
		from := r.reading
		r.mu.Unlock()
		if from.IsZero() { // busy elsewhere: judged once it reads again
			again = true
			continue
		}
		if from.Before(t0) {
			from = t0
		}
		if r.silentSince(from) && time.Since(from) >= abandonGrace {
			r.fault(abandoned{waited: time.Since(t0), interrupt: true})
			continue
		}
		again = true
	}
	if again {
		time.AfterFunc(abandonGrace/4, func() { f.abandonUnreported(epoch, t0) })
	}
}
