package check

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"hsdb/engine/regfile"
	"io"
	"os"
)

// maxGunzip bounds the archive a .ckpt.gz may expand to: a SpecForge
// sample is tens of MB (seq_len × 4 × hidden × 2 bytes); a file that
// expands past this is refused rather than exhausting memory.
const maxGunzip = 4 << 30

// torchZip is an open torch.save archive: from a file, or gunzipped into
// memory (SpecForge's data_{idx}.ckpt.gz, written by
// prepare_hidden_states.py --compress as gzip.open + torch.save and read
// back by OfflineEagle3Dataset._open_file the same way).
type torchZip struct {
	*zip.Reader
	f    *os.File
	size int64 // bytes of the archive: the file's, or the gunzipped archive's
}

func (z *torchZip) Close() error {
	if z.f != nil {
		return z.f.Close()
	}
	return nil
}

// openTorchZip opens path as a zip archive, gunzipping it first when it
// starts with gzip's magic (1f 8b). Errors: the OS's, gzip's (a corrupt or
// truncated stream), an expansion past maxGunzip, zip's.
func openTorchZip(path string) (*torchZip, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 2 && magic == [2]byte{0x1f, 0x8b} {
		f.Seek(0, io.SeekStart)
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(gz, maxGunzip+1))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if len(data) > maxGunzip {
			return nil, fmt.Errorf("gzip: expands past %d bytes", int64(maxGunzip))
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("gunzipped: %w", err)
		}
		return &torchZip{Reader: zr, size: int64(len(data))}, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &torchZip{Reader: zr, f: f, size: st.Size()}, nil
}
