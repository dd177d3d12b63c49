//go:build cuda

package driver

import "sync"

var (
	sharedMu   sync.Mutex
	sharedGPUs = map[int]*GPU{}
)

// SharedGPU returns the process-wide GPU for ordinal, opening it on first
// use: every backend Device on that ordinal (all virtual ranks, every
// engine a process loads) shares its one device thread, stream and memory
// pool, so their work is ordered and freed memory is reused across them.
// A shared GPU is never closed; it lives as long as the process. Errors
// are Open's (ErrNoDriver, ErrNoDevice, a driver *Error); a failed open is
// retried on the next call.
func SharedGPU(ordinal int) (*GPU, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if g, ok := sharedGPUs[ordinal]; ok {
		return g, nil
	}
	g, err := Open(ordinal)
	if err != nil {
		return nil, err
	}
	sharedGPUs[ordinal] = g
	return g, nil
}

// openShared returns the shared GPUs opened so far, by ordinal order.
func openShared() []*GPU {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	out := make([]*GPU, 0, len(sharedGPUs))
	for i := 0; len(out) < len(sharedGPUs); i++ {
		if g, ok := sharedGPUs[i]; ok {
			out = append(out, g)
		}
	}
	return out
}
