package worker

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// Direct links between workers (the front's Config.Hub unset): each
// worker listens for its peers on the address it reaches the front from
// (loopback for a loopback session), reports that address in its load
// report, and the front hands every worker all the workers' addresses
// (kindPeers); then each worker links to the peers it exchanges tensors
// with — the other ranks of its stage (the tensor-parallel collectives)
// and its rank in the stages before and after (hidden_states and
// residual). Of two peers the one in the higher slot dials. A link is
// accepted only from a dialer that presents the session's token, the
// front's link generation and a slot this worker expects; the acceptor
// answers with the same, which the dialer checks. Over a link flow only
// tensor frames (kindPeerData), decoded and checked as the front's are;
// nothing a peer sends is executed.
//
// Every frame carries the front's step sequence number, so that a frame
// left over from an aborted step is dropped. A worker waiting for a peer
// tells the front it is alive (kindPeerWait) every quarter of the
// front's timeout, so that the front's timeout names the worker that
// stopped answering, not the ones waiting for it; a front that aborts a
// step sends kindPeerAbort, which ends every wait of that step with
// backend.ErrAborted, as the hub's abort does.

// peerHello opens a link, both ways: the session token, the link
// generation, the sender's slot and the slot it means to reach.
type peerHello struct {
	Version  uint32
	Token    string
	Gen      int
	From, To int
}

func (h *peerHello) enc(e *enc) {
	e.u32(h.Version)
	e.str(h.Token)
	e.int(h.Gen)
	e.int(h.From)
	e.int(h.To)
}

func (h *peerHello) dec(d *dec) error {
	h.Version, h.Token, h.Gen, h.From, h.To = d.u32(), d.str(), d.int(), d.int(), d.int()
	return d.err
}

// Operations of a peer frame.
const (
	peerReduce byte = 1 // an all-reduce's operand
	peerGather byte = 2 // an all-gather's operand
	peerPipe   byte = 3 // hidden_states and residual to the next stage
)

// peerFrame is one tensor frame read from a link (or the error that ended
// the link).
type peerFrame struct {
	seq uint64
	op  byte
	ts  []*tensor.Tensor
	err error
}

// encPeerData writes a peer frame's payload: the step sequence, the
// operation, the tensors.
func encPeerData(e *enc, seq uint64, op byte, ts ...*tensor.Tensor) {
	e.i64(int64(seq))
	e.u8(op)
	e.u32(uint32(len(ts)))
	for _, t := range ts {
		e.tensor(t)
	}
}

// decPeerData reads what encPeerData wrote; err is set for a malformed
// payload (the count of tensors is bounded by the bytes left).
func decPeerData(d *dec) peerFrame {
	f := peerFrame{seq: uint64(d.i64()), op: d.u8()}
	n := d.count(1 + 4 + 4 + 1)
	for range n {
		f.ts = append(f.ts, d.tensor())
	}
	f.err = d.err
	return f
}

// encPeerList and decPeerList carry kindPeers: the link generation, the
// front's timeout and every slot's peer address.
func encPeerList(e *enc, gen int, timeout time.Duration, addrs []string) {
	e.int(gen)
	e.i64(int64(timeout))
	e.strs(addrs)
}

func decPeerList(d *dec) (gen int, timeout time.Duration, addrs []string) {
	return d.int(), time.Duration(d.i64()), d.strs()
}

// link is a connection to one peer; its reader goroutine hands the frames
// on through in.
type link struct {
	slot int
	c    *conn
	in   chan peerFrame
	done chan struct{}
}

func (l *link) read() {
	for {
		k, d, err := l.c.recv(-1)
		var f peerFrame
		if err == nil {
			if k != kindPeerData {
				err = fmt.Errorf("protocol: a %s message on a peer link", kindName(k))
			} else {
				f = decPeerData(d)
				err = f.err
			}
		}
		f.err = err
		select {
		case l.in <- f:
		case <-l.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// mesh is a worker's set of links of one generation, by peer slot.
type mesh struct {
	gen     int
	timeout time.Duration
	want    map[int]bool // the slots this worker links to
	links   map[int]*link
	mu      sync.Mutex
	closed  bool
	arrived chan struct{} // a link was accepted
}

func (m *mesh) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, l := range m.links {
		close(l.done)
		l.c.close()
	}
	m.links = map[int]*link{}
}

// peers is a worker's side of the direct links.
type peers struct {
	ln    net.Listener
	slot  int // stage × world + rank
	world int
	mu    sync.Mutex
	m     *mesh // the current generation; nil before the first kindPeers

	abortMu sync.Mutex
	aborted uint64        // the latest step sequence the front aborted
	note    chan struct{} // wakes a waiter after an abort
	seq     uint64        // the running step's sequence (the step goroutine's)
}

// add starts a link's reader and records it.
func (m *mesh) add(slot int, c *conn) {
	c.limit = maxFrame
	l := &link{slot: slot, c: c, in: make(chan peerFrame, 4), done: make(chan struct{})}
	m.mu.Lock()
	if m.closed { // replaced by a newer generation meanwhile
		m.mu.Unlock()
		c.close()
		return
	}
	m.links[slot] = l
	m.mu.Unlock()
	go l.read()
	select {
	case m.arrived <- struct{}{}:
	default:
	}
}

// abort records that the front aborted step seq and wakes a waiter.
func (p *peers) abort(seq uint64) {
	p.abortMu.Lock()
	if seq > p.aborted {
		p.aborted = seq
	}
	p.abortMu.Unlock()
	select {
	case p.note <- struct{}{}:
	default:
	}
}

// begin sets the running step's sequence number.
func (p *peers) begin(seq uint64) {
	p.abortMu.Lock()
	p.seq = seq
	p.abortMu.Unlock()
}

func (p *peers) isAborted() bool {
	p.abortMu.Lock()
	defer p.abortMu.Unlock()
	return p.aborted >= p.seq
}

// link returns the current link to slot; a missing one panics with
// ErrAborted (the front relinks before the next step).
func (s *server) link(slot int) *link {
	p := s.peers
	p.mu.Lock()
	m := p.m
	p.mu.Unlock()
	var l *link
	if m != nil {
		m.mu.Lock()
		l = m.links[slot]
		m.mu.Unlock()
	}
	if l == nil {
		panic(fmt.Errorf("%w: worker slot %d has no link to slot %d", backend.ErrAborted, p.slot, slot))
	}
	return l
}

// beforePeerSend, when set (only by this package's tests, in their
// worker processes), is called with the sender's slot and the operation
// before a peer frame goes out: a test makes a worker die or hang there,
// in the middle of a collective.
var beforePeerSend func(slot int, op byte)

// sendPeer sends tensors ts for op of the running step to slot.
func (s *server) sendPeer(slot int, op byte, ts ...*tensor.Tensor) {
	if beforePeerSend != nil {
		beforePeerSend(s.peers.slot, op)
	}
	if s.peers.isAborted() {
		panic(fmt.Errorf("%w: the front aborted the step", backend.ErrAborted))
	}
	l := s.link(slot)
	var e enc
	encPeerData(&e, s.peers.seq, op, ts...)
	if err := l.c.send(kindPeerData, &e); err != nil {
		panic(fmt.Errorf("%w: worker slot %d: sending to slot %d: %v", backend.ErrAborted, s.peers.slot, slot, err))
	}
}

// recvPeer waits for slot's frame of op in the running step: n tensors.
// Frames of earlier steps are dropped; a broken link, a protocol error,
// an abort from the front, or nothing for twice the front's timeout (a
// backstop: the front's own timeout, Config.Timeout, ends the silent
// peer first, as it ends a rank silent in the hub) panics with
// ErrAborted (the front reports the worker that failed). While it waits
// it tells the front every quarter timeout that it lives.
func (s *server) recvPeer(slot int, op byte, n int) []*tensor.Tensor {
	p := s.peers
	l := s.link(slot)
	p.mu.Lock()
	timeout := p.m.timeout
	p.mu.Unlock()
	tick := time.NewTicker(max(timeout/4, time.Millisecond))
	defer tick.Stop()
	start := time.Now()
	who := fmt.Sprintf("worker slot %d", p.slot)
	take := func(f peerFrame) []*tensor.Tensor {
		if f.err != nil {
			panic(fmt.Errorf("%w: %s: the link to slot %d ended: %v", backend.ErrAborted, who, slot, f.err))
		}
		if f.seq < p.seq {
			return nil // an aborted step's
		}
		if f.seq > p.seq || f.op != op || len(f.ts) != n {
			panic(fmt.Errorf("%w: %s: protocol: slot %d sent op %d with %d tensors of step sequence %d, want op %d with %d of %d",
				backend.ErrAborted, who, slot, f.op, len(f.ts), f.seq, op, n, p.seq))
		}
		return f.ts
	}
	for {
		select { // what has come first: an aborted step's frames go even when this step is aborted too
		case f := <-l.in:
			if ts := take(f); ts != nil {
				return ts
			}
			continue
		default:
		}
		if p.isAborted() {
			panic(fmt.Errorf("%w: %s: the front aborted the step", backend.ErrAborted, who))
		}
		select {
		case f := <-l.in:
			if ts := take(f); ts != nil {
				return ts
			}
		case <-p.note:
		case <-tick.C:
			if time.Since(start) > 2*timeout {
				panic(fmt.Errorf("%w: %s: slot %d sent nothing for %s", backend.ErrAborted, who, slot, 2*timeout))
			}
			var e enc
			e.int(slot)
			if err := s.c.send(kindPeerWait, &e); err != nil {
				s.fail(err)
			}
		}
	}
}

// missing lists the slots this worker wants but has no link to yet, in
// order, each as "rank R of stage S" (slot = S × world + R, world the
// tensor-parallel size), so a failed linking names the peers that did
// not answer, not only the worker that waited.
func (m *mesh) missing(world int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var slots []int
	for s := range m.want {
		if m.links[s] == nil {
			slots = append(slots, s)
		}
	}
	slices.Sort(slots)
	parts := make([]string, len(slots))
	for i, s := range slots {
		parts[i] = fmt.Sprintf("rank %d of stage %d", s%world, s/world)
	}
	return strings.Join(parts, ", ")
}
