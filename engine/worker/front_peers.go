package worker

import "fmt"

// link hands every worker the workers' peer addresses (kindPeers, a new
// link generation) and waits until each has linked to its peers
// (peers.go); with Config.Hub it does nothing and the workers' tensors go
// through the front. A worker that cannot link is an error naming it.
func (f *Front) link() error {
	if f.cfg.Hub {
		return nil
	}
	f.mu.Lock()
	slots := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	f.gen++
	addrs := make([]string, len(slots))
	for i, r := range slots {
		addrs[i] = r.peerAddr
	}
	for _, r := range slots {
		r.call.Lock()
		defer r.call.Unlock()
	}
	for _, r := range slots {
		var e enc
		encPeerList(&e, f.gen, f.cfg.Timeout, addrs)
		if err := r.c.send(kindPeers, &e); err != nil {
			return r.fault(err)
		}
	}
	var first error
	for _, r := range slots {
		k, d, err := r.recvQueued()
		switch {
		case err != nil:
			err = r.fault(err)
		case k == kindError:
			err = fmt.Errorf("%s (pid %d on %s): %s", r.who(), r.pid, r.host, d.str())
		case k != kindPeersReady:
			err = r.fault(fmt.Errorf("protocol: a %s message where peers ready was expected", kindName(k)))
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// abortPeers tells every live worker that the current step is aborted
// (kindPeerAbort with the step's sequence number): a worker waiting for a
// peer stops waiting, as a rank waiting in the hub does.
func (f *Front) abortPeers() {
	if f.cfg.Hub {
		return
	}
	seq := f.seq.Load()
	f.mu.Lock()
	slots := append([]*remoteRank(nil), f.slots...)
	f.mu.Unlock()
	for _, r := range slots {
		if r == nil || r.failed() != nil {
			continue
		}
		var e enc
		e.i64(int64(seq))
		r.c.send(kindPeerAbort, &e) // a worker that cannot take it is failing: its own report says why
	}
}

// peerWait reads a worker's note that it waits for a peer (kindPeerWait):
// the peer's slot, kept for the report should the worker stop answering.
func (r *remoteRank) peerWait(d *dec) error {
	slot := d.int()
	if d.err != nil || slot >= len(r.f.slots) {
		return fmt.Errorf("protocol: a bad peer wait (%v, slot %d)", d.err, slot)
	}
	return nil
}
