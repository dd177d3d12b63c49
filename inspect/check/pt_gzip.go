package check

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"unicode/utf8"

	"hsdb/engine/bytesize"
	"hsdb/engine/regfile"
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
// starts with gzip's magic (1f 8b; gunzipTorch). Errors: the OS's,
// errCutShort (with the file's size), gzip's (a corrupt stream), an
// ErrLimit refusal of an expansion past its bound, zip's.
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
		defer f.Close()
		data, err := gunzipTorch(f, st.Size())
		if err != nil {
			return nil, err
		}
		if err := zipEntriesBound(bytes.NewReader(data), int64(len(data))); err != nil {
			return nil, err
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("gunzipped: %w", zipCutShort(err, data[:min(len(data), 4)], int64(len(data))))
		}
		return &torchZip{Reader: zr, size: int64(len(data))}, nil
	}
	if err := zipEntriesBound(f, st.Size()); err != nil {
		f.Close()
		return nil, err
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, zipCutShort(err, magic[:n], st.Size())
	}
	return &torchZip{Reader: zr, f: f, size: st.Size()}, nil
}

// gunzipTorch gunzips f, a file of size bytes that starts with gzip's
// magic, into memory, refusing it as soon as it expands past what it may
// hold. A gzip file ends with ISIZE, its uncompressed size mod 2^32 (RFC
// 1952 §2.3.1), and SpecForge writes one gzip member (gzip.open +
// torch.save), so the stream may yield at most ISIZE bytes; check then
// holds the gunzipped archive and the tensors copied out of it, so at most
// half the host's MemAvailable (engine/hostmem) too; and at most
// maxGunzip. The buffer grows with what the stream yields, never to a
// bound up front: a stream that lies about its size allocates what it
// yields before it is caught, not what it declares. A second gzip member
// is refused (its size is in no trailer read here). The first bytes must
// start a zip archive, and a local file header must name its record (a
// gzip bomb of zeros behind "PK\x03\x04" is refused at byte 30, not
// after 4 GiB). A file cut short ends the stream early: errCutShort.
func gunzipTorch(f *os.File, size int64) ([]byte, error) {
	bound, why := int64(maxGunzip), fmt.Sprintf("the %d bytes hsdb gunzips at most", int64(maxGunzip))
	var trailer [4]byte
	if _, err := f.ReadAt(trailer[:], size-4); err == nil && size >= 18 {
		if isize := int64(binary.LittleEndian.Uint32(trailer[:])); isize < bound {
			bound, why = isize, fmt.Sprintf("the %d bytes its gzip trailer declares (ISIZE, the last 4 bytes: a gzip bomb, or a file cut short; it is %d bytes)", isize, size)
		}
	}
	if avail, ok := memAvailable(); ok && avail/2 < bound {
		bound, why = avail/2, fmt.Sprintf("%d bytes (%s), half the host's %s available (MemAvailable: check holds the gunzipped archive and the tensors copied out of it)", avail/2, bytesize.Binary(avail/2), bytesize.Binary(avail))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	gz, err := gzip.NewReader(br)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: the gzip header ends early (the file is %d bytes)", errCutShort, size)
	}
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	gz.Multistream(false)
	data := make([]byte, 0, min(bound+1, 1<<20))
	for {
		if len(data) == cap(data) {
			data = slices.Grow(data, int(min(int64(cap(data)), bound+1-int64(cap(data)))))
		}
		n, rerr := gz.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err := zipStart(data); err != nil {
			return nil, err
		}
		if int64(len(data)) > bound {
			return nil, limitErr("the gzip stream expands past %s", why)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if errors.Is(rerr, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the gzip stream ends before its end marker (the file is %d bytes)", errCutShort, size)
		}
		if rerr != nil {
			return nil, fmt.Errorf("gzip: %w", rerr)
		}
	}
	if _, err := br.Peek(1); err == nil {
		return nil, fmt.Errorf("gzip: a second gzip member follows the first (%d bytes gunzipped); SpecForge's gzip.open writes one: gunzip the file and check the archive", len(data))
	}
	return data, nil
}

// zipStart checks the first bytes of a gunzipped archive as they arrive: a
// torch.save archive starts with a local file header (or, empty, with the
// end record), and a local header names its record (torch.save: NAME/data.pkl).
// Anything else is refused from its first bytes, before the rest is
// expanded into memory (a gzip bomb of zeros, a gzipped file of another
// kind).
func zipStart(data []byte) error {
	if len(data) < 4 {
		return nil
	}
	if !bytes.HasPrefix(data, []byte("PK\x03\x04")) && !bytes.HasPrefix(data, []byte("PK\x05\x06")) {
		return fmt.Errorf("gunzipped: not a zip archive (starts with % x), so not torch.save's", data[:4])
	}
	if !bytes.HasPrefix(data, []byte("PK\x03\x04")) || len(data) < 30 {
		return nil
	}
	nameLen := int(binary.LittleEndian.Uint16(data[26:]))
	if nameLen == 0 {
		return fmt.Errorf("gunzipped: the first zip record has an empty name (local file header % x), so not torch.save's (a gzip bomb behind a zip signature?)", data[:30])
	}
	if len(data) >= 30+nameLen {
		if name := data[30 : 30+nameLen]; !utf8.Valid(name) || bytes.IndexByte(name, 0) >= 0 {
			return fmt.Errorf("gunzipped: the first zip record's name %q is not text, so not torch.save's", name)
		}
	}
	return nil
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
