package worker

import (
	"fmt"
	"net"
	"time"
)

// dialFront connects to the front at addr, trying again until timeout has
// passed: a launcher (srun, a Kubernetes job, ssh) may start the workers
// before the front listens, or before its name resolves, and a refused or
// failed dial then means "not yet". The waits between attempts grow from
// 50 ms to 1 s. The error after the last attempt says how long it tried.
func dialFront(addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	wait := 50 * time.Millisecond
	for {
		left := time.Until(deadline)
		if left <= 0 {
			left = time.Millisecond // one attempt, however short the timeout
		}
		nc, err := net.DialTimeout("tcp", addr, left)
		if err == nil {
			return nc, nil
		}
		left = time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("no front reached in %s (--dial-timeout): %w", timeout, err)
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, time.Second)
	}
}
