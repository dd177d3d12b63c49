package worker

import (
	"fmt"
	"net"
	"time"
)

// How a worker links to its peers (the protocol is described in
// peers.go): its listener, the greeting of a dialer, the dial, and the
// building of one generation's links.

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

// who names slot as its stage and tensor-parallel rank.
func (p *peers) who(slot int) string {
	return fmt.Sprintf("rank %d of stage %d", slot%p.world, slot/p.world)
}

// acceptPeers greets every peer connection (acceptPeer).
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
		why = fmt.Sprintf("slot %d does not link to slot %d (this worker is slot %d, %s)", h.From, h.To, p.slot, p.who(p.slot))
	}
	if why == "" {
		m.mu.Lock()
		if m.links[h.From] != nil {
			why = fmt.Sprintf("slot %d (%s) is linked already", h.From, p.who(h.From))
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
			return fmt.Errorf("worker slot %d: %d of %d peers linked within %s; not linked: %s (a worker stopped or gone there ends with the next run's timeout; if the workers' hosts cannot reach each other, send the tensors through the front: --worker-links hub)", slot, n, len(want), wait, m.missing(world))
		}
	}
}
