package check

import (
	"bytes"
	"encoding/binary"
	"io"
)

// zipEntriesBound reads the record count of the zip archive r (size bytes)
// from its end of central directory record (APPNOTE.TXT 4.3.16, and the
// ZIP64 one of 4.3.14 when the count is 0xFFFF) and refuses an archive of
// more than MaxZipEntries records before archive/zip reads the directory.
// An archive without a readable end record is left to archive/zip to
// refuse.
func zipEntriesBound(r io.ReaderAt, size int64) error {
	const eocdLen, maxComment = 22, 0xFFFF
	n := min(size, eocdLen+maxComment)
	tail := make([]byte, n)
	if _, err := r.ReadAt(tail, size-n); err != nil && err != io.EOF {
		return nil
	}
	at := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if at < 0 || len(tail)-at < eocdLen {
		return nil
	}
	entries := uint64(binary.LittleEndian.Uint16(tail[at+10:]))
	if entries == 0xFFFF && at >= 20 && bytes.Equal(tail[at-20:at-16], []byte("PK\x06\x07")) {
		off := binary.LittleEndian.Uint64(tail[at-20+8:])
		var z64 [40]byte
		if off < uint64(size) && off+40 <= uint64(size) {
			if _, err := r.ReadAt(z64[:], int64(off)); err == nil && bytes.Equal(z64[:4], []byte("PK\x06\x06")) {
				entries = binary.LittleEndian.Uint64(z64[32:])
			}
		}
	}
	if entries > MaxZipEntries {
		return limitErr("the archive lists %d records, more than %d (MaxZipEntries: torch.save writes one per storage)", entries, MaxZipEntries)
	}
	return nil
}
