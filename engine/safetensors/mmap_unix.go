//go:build unix

package safetensors

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the whole of f read-only and shared (PROT_READ, MAP_SHARED),
// so pages are read from the page cache only when touched. It returns the
// mapping and the function that unmaps it. A zero-length file maps to nil.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map on this platform", size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
