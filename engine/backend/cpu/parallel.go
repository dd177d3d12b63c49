package cpu

import (
	"runtime"
	"sync"
)

// workers is the number of goroutines large ops are split over.
var workers = runtime.GOMAXPROCS(0)

// parallelMin is the work (multiply-adds) below which an op runs on the
// calling goroutine. Waking a parked worker costs microseconds, and a
// matrix-vector product streams its weights at memory speed, so splitting
// pays only for large ops: on the 2-core development VM, Linear with 16
// tokens through a [512, 512] weight (4M multiply-adds) ran about 10%
// slower split than inline, [1024, 1024] (16M) 1.5× faster, [2048, 2048]
// 1.7× faster; single-token decode of stories260K (at most 33k per op)
// lost a third of its speed when ops of 16k and more were split.
var parallelMin = 1 << 22 // a variable so that tests can force the split

type chunk struct {
	lo, hi int
	body   func(lo, hi int)
	wg     *sync.WaitGroup
}

var (
	poolOnce sync.Once
	poolCh   chan chunk
)

// startPool starts workers-1 long-lived goroutines that run chunks; the
// caller of parallelFor runs one chunk itself.
func startPool() {
	poolCh = make(chan chunk, 4*workers)
	for range workers - 1 {
		go func() {
			for c := range poolCh {
				c.body(c.lo, c.hi)
				c.wg.Done()
			}
		}()
	}
}

// parallel reports whether an op of n independent units and about work
// multiply-adds is worth splitting over the pool. Ops check it before
// building the closure for parallelFor, so that the inline path allocates
// nothing.
func parallel(n, work int) bool {
	return work >= parallelMin && n >= 2 && workers >= 2
}

// parallelFor runs body over [0, n) split into contiguous chunks, one per
// worker, the caller running the first. body must not panic (ops check
// their arguments before splitting work).
func parallelFor(n int, body func(lo, hi int)) {
	poolOnce.Do(startPool)
	w := min(workers, n)
	size := (n + w - 1) / w
	var wg sync.WaitGroup
	for lo := size; lo < n; lo += size {
		wg.Add(1)
		poolCh <- chunk{lo: lo, hi: min(lo+size, n), body: body, wg: &wg}
	}
	body(0, min(size, n))
	wg.Wait()
}
