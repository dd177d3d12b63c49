package worker

import (
	"fmt"
	"net"
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
	ln   net.Listener
	slot int
	mu   sync.Mutex
	m    *mesh // the current generation; nil before the first kindPeers

	abortMu sync.Mutex
	aborted uint64        // the latest step sequence the front aborted
	note    chan struct{} // wakes a waiter after an abort
	seq     uint64        // the running step's sequence (the step goroutine's)
}

// listenPeers opens the worker's peer listener on the address of its
// connection to the front (an ephemeral port).
func listenPeers(front net.Conn) (*peers, error) {
	host := "127.0.0.1"
	if a, ok := front.LocalAddr().(*net.TCPAddr); ok {
		host = a.IP.String()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("worker: a listener for peers on %s: %w", host, err)
	}
	return &peers{ln: ln, note: make(chan struct{}, 1)}, nil
}

// accept greets every peer connection (acceptPeer).
func (s *server) acceptPeers(token string) {
	for {
		nc, err := s.peers.ln.Accept()
		if err != nil {
			return
		}
		go s.acceptPeer(newConn(nc), token)
	}
}

// acceptPeer checks a dialer's hello: the token, the current generation,
// this worker's slot as its target and a slot this worker links to that
// has no link yet; it answers with its own hello and adds the link, or
// refuses with the reason.
func (s *server) acceptPeer(c *conn, token string) {
	k, d, err := c.recv(10 * time.Second)
	if err != nil || k != kindPeerHello {
		c.close()
		return
	}
	var h peerHello
	p := s.peers
	p.mu.Lock()
	m := p.m
	p.mu.Unlock()
	why := ""
	switch {
	case h.dec(d) != nil:
		why = "a malformed peer hello"
	case h.Version != Version:
		why = fmt.Sprintf("peer protocol version %d, this worker speaks %d", h.Version, Version)
	case !checkToken(h.Token, token):
		why = "wrong token"
	case m == nil || h.Gen != m.gen:
		why = fmt.Sprintf("link generation %d is not this worker's", h.Gen)
	case h.To != p.slot || h.From <= p.slot || !m.want[h.From]:
		why = fmt.Sprintf("slot %d does not link to slot %d (this worker is slot %d)", h.From, h.To, p.slot)
	}
	if why == "" {
		m.mu.Lock()
		if m.links[h.From] != nil {
			why = fmt.Sprintf("slot %d is linked already", h.From)
		}
		m.mu.Unlock()
	}
	if why != "" {
		var e enc
		e.str(why)
		c.send(kindError, &e)
		c.close()
		return
	}
	reply := peerHello{Version: Version, Token: token, Gen: m.gen, From: p.slot, To: h.From}
	var e enc
	reply.enc(&e)
	c.timeout = m.timeout
	if err := c.send(kindPeerHello, &e); err != nil {
		c.close()
		return
	}
	m.add(h.From, c)
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

// dialPeer opens a link to slot at addr and checks the acceptor's hello.
func dialPeer(addr string, token string, gen, from, to int, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := newConn(nc)
	c.timeout = timeout
	h := peerHello{Version: Version, Token: token, Gen: gen, From: from, To: to}
	var e enc
	h.enc(&e)
	if err := c.send(kindPeerHello, &e); err != nil {
		c.close()
		return nil, err
	}
	d, err := c.expect(kindPeerHello, timeout)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("refused: %w", err)
	}
	var r peerHello
	if r.dec(d) != nil || !checkToken(r.Token, token) || r.Gen != gen || r.From != to || r.To != from {
		c.close()
		return nil, fmt.Errorf("the worker at %s is not slot %d of link generation %d with the session's token", addr, to, gen)
	}
	return c, nil
}

// linkTimeout bounds how long a worker tries to link to its peers (all
// are loaded and listening by then: what takes longer is a host that
// cannot reach another).
const linkTimeout = 30 * time.Second

// close ends the listener and the current links.
func (p *peers) close() {
	p.ln.Close()
	p.mu.Lock()
	m := p.m
	p.mu.Unlock()
	if m != nil {
		m.close()
	}
}

// linkPeers builds the links of a kindPeers message: generation, timeout,
// every slot's address; the worker is slot of a world of world ranks in
// stages stages. It replaces the previous generation's links.
func (s *server) linkPeers(d *dec, token string, world, stages int) error {
	gen, timeout, addrs := decPeerList(d)
	if d.err != nil || timeout <= 0 || len(addrs) != world*stages {
		return fmt.Errorf("protocol: a bad peer list (%v; %d addresses for %d slots, timeout %s)", d.err, len(addrs), world*stages, timeout)
	}
	p := s.peers
	slot := p.slot
	want := map[int]bool{}
	stage, rank := slot/world, slot%world
	for r := range world {
		if r != rank {
			want[stage*world+r] = true
		}
	}
	if stage > 0 {
		want[slot-world] = true
	}
	if stage < stages-1 {
		want[slot+world] = true
	}
	m := &mesh{gen: gen, timeout: timeout, want: want, links: map[int]*link{}, arrived: make(chan struct{}, 1)}
	p.mu.Lock()
	old := p.m
	p.m = m
	p.mu.Unlock()
	if old != nil {
		old.close()
	}
	wait := min(timeout, linkTimeout)
	deadline := time.Now().Add(wait)
	for peer := range want {
		if peer > slot {
			continue
		}
		for {
			c, err := dialPeer(addrs[peer], token, gen, slot, peer, time.Until(deadline))
			if err == nil {
				c.timeout = timeout
				m.add(peer, c)
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("worker slot %d: linking to slot %d at %s: %w (can the workers' hosts reach each other? else send the tensors through the front: --worker-links hub)", slot, peer, addrs[peer], err)
			}
			time.Sleep(20 * time.Millisecond) // a refusal may be a peer that has not yet received this generation
		}
	}
	for {
		m.mu.Lock()
		n := len(m.links)
		m.mu.Unlock()
		if n == len(want) {
			return nil
		}
		select {
		case <-m.arrived:
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("worker slot %d: %d of %d peers linked within %s (can the workers' hosts reach each other? else send the tensors through the front: --worker-links hub)", slot, n, len(want), wait)
		}
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
