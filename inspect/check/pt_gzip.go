package check

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
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

// errCutShort marks an archive that ends early: a gzip stream without its
// end, or a zip archive that starts with a local file header but has no
// end-of-central-directory record (zip's last bytes), as an interrupted
// write or copy leaves it.
var errCutShort = errors.New("a torch.save archive cut short (an interrupted write or copy?)")

// openTorchZip opens path as a zip archive, gunzipping it first when it
// starts with gzip's magic (1f 8b). Errors: the OS's, errCutShort (with the
// file's size), gzip's (a corrupt stream), an expansion past maxGunzip,
// zip's.
func openTorchZip(path string) (*torchZip, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	if n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		f.Seek(0, io.SeekStart)
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the gzip header ends early (the file is %d bytes)", errCutShort, st.Size())
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		// A torch.save archive starts with a local file header (or, empty,
		// with the end record): anything else is refused from its first
		// bytes, before the rest is expanded into memory (a gzip bomb of
		// zeros, a gzipped file of another kind).
		var head [4]byte
		hn, herr := io.ReadFull(gz, head[:])
		if herr == nil && !bytes.Equal(head[:], []byte("PK\x03\x04")) && !bytes.Equal(head[:], []byte("PK\x05\x06")) {
			return nil, fmt.Errorf("gunzipped: not a zip archive (starts with % x), so not torch.save's", head[:])
		}
		data, err := io.ReadAll(io.LimitReader(io.MultiReader(bytes.NewReader(head[:hn]), gz), maxGunzip+1))
		if err == nil && herr != nil && !errors.Is(herr, io.EOF) && !errors.Is(herr, io.ErrUnexpectedEOF) {
			err = herr
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the gzip stream ends before its end marker (the file is %d bytes)", errCutShort, st.Size())
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if len(data) > maxGunzip {
			return nil, fmt.Errorf("gzip: expands past %d bytes", int64(maxGunzip))
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("gunzipped: %w", zipCutShort(err, data[:min(len(data), 4)], int64(len(data))))
		}
		return &torchZip{Reader: zr, size: int64(len(data))}, nil
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, zipCutShort(err, magic[:n], st.Size())
	}
	return &torchZip{Reader: zr, f: f, size: st.Size()}, nil
}

// zipCutShort turns zip's ErrFormat on an archive that starts with a local
// file header (PK 03 04) but has no end-of-central-directory record into
// errCutShort naming its size; other errors pass unchanged.
func zipCutShort(err error, head []byte, size int64) error {
	if errors.Is(err, zip.ErrFormat) && bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return fmt.Errorf("%w: a zip archive without its end-of-central-directory record (the archive is %d bytes)", errCutShort, size)
	}
	return err
}
