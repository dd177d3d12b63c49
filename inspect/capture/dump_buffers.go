package capture

import (
	"fmt"
	"io"
	"sync"

	"hsdb/engine/regfile"
)

// bufPool holds the byte buffers of trainer files (the interleaved
// layers, the encoded file, the re-read file: each about a sample's size)
// for reuse by the next file, sparing the allocation and zeroing of tens
// of MB per file while many writers run.
var bufPool sync.Pool

// getBuf returns a buffer of length n, reused when one large enough is
// free; its contents are undefined. Capacities are whole MiB, so that a
// file's three buffers of nearly one size serve each other.
func getBuf(n int) []byte {
	if p, ok := bufPool.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, (n+1<<20-1)&^(1<<20-1))
}

// putBuf gives a buffer from getBuf back; nothing may use it afterwards.
func putBuf(b []byte) {
	if cap(b) > 0 {
		bufPool.Put(&b)
	}
}

// readBack reads a file just written into a getBuf buffer: want bytes
// (its recorded size; 0 when unknown, then its size as the file system
// says), and an error when the file holds another number of bytes.
func readBack(path string, want int64) ([]byte, error) {
	f, err := regfile.Open(path) // a named pipe is refused, not waited on
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if want <= 0 {
		want = fi.Size()
	}
	if fi.Size() != want {
		return nil, fmt.Errorf("%s holds %d bytes, %d were written", path, fi.Size(), want)
	}
	b := getBuf(int(want))
	if _, err := io.ReadFull(f, b); err != nil {
		putBuf(b)
		return nil, err
	}
	return b, nil
}
