//go:build !unix

package safetensors

import (
	"io"
	"os"
)

// mapFile reads the whole of f into memory where mmap is not available (the
// fallback for non-Unix systems; hsdb's targets are Linux).
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}
