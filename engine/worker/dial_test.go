package worker

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestServeWaitsForTheFront: --dial-timeout is "how long to try to reach
// the front", so a worker a launcher starts before the front listens
// (srun, a Kubernetes job) keeps trying until the front is there: the
// front's port opens 300 ms after the worker started, and the worker's
// hello must arrive on it. With nothing listening for the whole
// timeout, the worker fails naming the address. Fails with a single
// dial (connection refused at once).
func TestServeWaitsForTheFront(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	done := make(chan error, 1)
	go func() { done <- Serve(WorkerConfig{Connect: addr, Token: "t", Rank: -1, Dial: 10 * time.Second}) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the worker gave up before the front listened: %v", err)
	default:
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	nc, err := ln.Accept()
	if err != nil {
		t.Fatalf("no worker reached the front once it listened: %v", err)
	}
	c := newConn(nc)
	k, d, err := c.recv(5 * time.Second)
	if err != nil || k != kindHello {
		t.Fatalf("first frame %v, %v; want the hello", kindName(k), err)
	}
	var h hello
	if err := h.dec(d); err != nil || h.Token != "t" {
		t.Fatalf("hello %+v, %v", h, err)
	}
	c.close()
	if err := <-done; err == nil {
		t.Error("Serve returned nil after the front closed before assigning a rank")
	}

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr2 := ln2.Addr().String()
	ln2.Close()
	err = Serve(WorkerConfig{Connect: addr2, Token: "t", Rank: -1, Dial: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), addr2) {
		t.Errorf("nothing listening: %v; want an error naming %s", err, addr2)
	}
}
