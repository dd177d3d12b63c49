package worker

import (
	"testing"

	"hsdb/engine"
)

// frontStart is what Start returned, as startListening delivers it.
type frontStart struct {
	f   *Front
	err error
}

// startListening runs Start(path, opts, cfg) in a goroutine (it returns
// only once every slot has a worker) and returns the address the front
// listens on, as soon as it does, and the channel Start's result arrives
// on. A Start that ends before it listens fails the test.
func startListening(t *testing.T, path string, opts engine.Options, cfg Config) (string, <-chan frontStart) {
	t.Helper()
	ln := make(chan string, 1)
	cfg.onListen = func(addr string) { ln <- addr }
	started := make(chan frontStart, 1)
	go func() {
		f, err := Start(path, opts, cfg)
		started <- frontStart{f, err}
	}()
	select {
	case addr := <-ln:
		return addr, started
	case r := <-started:
		t.Fatalf("the front ended before it listened: %v", r.err)
		return "", nil
	}
}
