package cpu

import (
	"runtime"
	"sync"
	"unsafe"
)

// alignedBytes returns n zeroed bytes whose address is 8-byte aligned.
func alignedBytes(n int) []byte {
	if n == 0 {
		return nil
	}
	buf := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), n)
}

// workers is the number of goroutines large ops are split over.
var workers = runtime.GOMAXPROCS(0)

// parallelMin is the work (multiply-adds) below which an op runs on the
// calling goroutine: starting goroutines costs about a microsecond, a few
// thousand multiply-adds.
const parallelMin = 1 << 15

// parallelFor runs body over [0, n) split into contiguous chunks, on up to
// `workers` goroutines when work (an estimate of multiply-adds) is large
// enough, else inline.
func parallelFor(n int, work int, body func(lo, hi int)) {
	w := workers
	if work < parallelMin || n < 2 || w < 2 {
		body(0, n)
		return
	}
	if w > n {
		w = n
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}
