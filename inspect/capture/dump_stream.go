package capture

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"hsdb/engine/jsonerr"
	"hsdb/engine/regfile"
)

// A dump's sequence records live in its journal (JournalName), not in
// memory: a capture job of 10⁷ sequences would otherwise hold ~1 KiB per
// sequence until Finish. Finish and a resume read the journal in input
// order (journalRecords: an external sort of (index, offset) pairs, the
// duplicate-id check's, capture_ids.go), and manifest.json is written by
// streaming those records between the header's fields (writeManifestStreamed),
// byte for byte what json.MarshalIndent writes for the whole Manifest.

// maxJournalLine bounds one journal line (a record is about 1 KiB; a
// replica line a few hundred bytes per captured tensor): a longer line is
// read as the journal's end, as a line cut short by a kill is.
const maxJournalLine = 1 << 24

// indexSet is a set of input indices, one bit each (the sequences a
// resume kept; the files Finish keeps): 1.25 MB for 10⁷ sequences, where
// a map of ids held ~100 bytes per sequence.
type indexSet struct{ w []uint64 }

func (s *indexSet) add(i int) {
	if i < 0 {
		return
	}
	for len(s.w) <= i/64 {
		s.w = append(s.w, 0)
	}
	s.w[i/64] |= 1 << (i % 64)
}

func (s *indexSet) del(i int) {
	if i >= 0 && i/64 < len(s.w) {
		s.w[i/64] &^= 1 << (i % 64)
	}
}

func (s *indexSet) has(i int) bool {
	return i >= 0 && i/64 < len(s.w) && s.w[i/64]&(1<<(i%64)) != 0
}

// readLine reads one '\n'-terminated line of at most maxJournalLine bytes
// into buf[:0]; ok is false at the end, for a last line without its
// newline (cut short) and for a longer line.
func readLine(r *bufio.Reader, buf []byte) (line []byte, ok bool, err error) {
	buf = buf[:0]
	for {
		frag, err := r.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > maxJournalLine {
			return buf, false, nil
		}
		switch {
		case err == nil:
			return buf, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return buf, false, nil
		}
		return buf, false, err
	}
}

// journalRecords calls f with every sequence record of the journal at
// path in input order (SeqRecord.Index), a later record of an index
// replacing an earlier one (a sequence captured again after a resume
// found its file stale), and merges the replica lines into reps when it
// is not nil (per key the worst difference, as mergeReplicas does). The
// journal ends at its first line that is not a whole JSON entry: a last
// line cut short by a kill is ignored. A missing journal has no records.
// Memory: the sort's buffer (idRunCap entries) and one line, whatever the
// journal's length.
func journalRecords(path string, reps map[string]ReplicaRecord, f func(SeqRecord) error) error {
	jf, err := regfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer jf.Close()
	var sorter idCheck
	defer sorter.close()
	r := bufio.NewReaderSize(jf, 1<<16)
	var off int64
	var buf []byte
	for {
		line, ok, err := readLine(r, buf)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		buf = line
		if !ok {
			break
		}
		var e journalEntry
		if json.Unmarshal(line, &e) != nil {
			break
		}
		if e.Seq != nil {
			if err := sorter.addEntry(idEntry{hi: uint64(e.Seq.Index), lo: uint64(off), row: int64(len(line))}); err != nil {
				return fmt.Errorf("sorting %s: %w", path, err)
			}
		}
		if reps != nil {
			mergeReplicaInto(reps, e.Replicas)
			if err := checkReplicaKeys(len(reps)); err != nil {
				return fmt.Errorf("reading %s: %w: %w", path, ErrManifest, err)
			}
		}
		off += int64(len(line))
	}
	var prev idEntry
	have := false
	emit := func(e idEntry) error {
		b := make([]byte, e.row)
		if _, err := jf.ReadAt(b, int64(e.lo)); err != nil {
			return fmt.Errorf("reading %s at %d: %w", path, e.lo, err)
		}
		var je journalEntry
		if err := json.Unmarshal(b, &je); err != nil || je.Seq == nil {
			return fmt.Errorf("%s changed while it was read (at byte %d)", path, e.lo)
		}
		return f(*je.Seq)
	}
	err = sorter.each(func(e idEntry) error {
		if have && e.hi != prev.hi {
			if err := emit(prev); err != nil {
				return err
			}
		}
		prev, have = e, true // entries of one index ascend by offset: the last is the latest
		return nil
	})
	if err == nil && have {
		err = emit(prev)
	}
	return err
}

// mergeReplicaInto merges one batch's cross-rank checks into reps: per key
// the worst relative difference (and its rank), the differing ranks and
// the lone one (ReplicaRecord.merge), the latest rank count, OK while the
// worst is within ReplicaTol.
func mergeReplicaInto(reps, batch map[string]ReplicaRecord) {
	for k, r := range batch {
		old, ok := reps[k]
		if !ok {
			old = ReplicaRecord{MaxRelDiff: r.MaxRelDiff, WorstRank: r.WorstRank}
		}
		old.merge(r)
		reps[k] = old
	}
}

// seqsMarker is where json.MarshalIndent puts an empty sequences list in
// a Manifest; no string value can hold the newline it starts with.
var seqsMarker = []byte("\n  \"sequences\": []")

// writeManifestStreamed writes hdr, with the records records yields as
// its sequences, to DIR/manifest.json: the same bytes as writeManifest of
// the whole Manifest (json.MarshalIndent, two-space indent, trailing
// newline), through a temporary file that is fsynced, re-read (streamed:
// its sha256 and its record count must equal what was written, and it
// must decode as a manifest) and renamed, the directory fsynced. It
// returns the number of records written.
func writeManifestStreamed(dir string, hdr Manifest, records func(func(SeqRecord) error) error) (int, error) {
	path := filepath.Join(dir, ManifestName)
	hdr.Sequences = []SeqRecord{}
	b, err := json.MarshalIndent(&hdr, "", "  ")
	if err != nil {
		return 0, err
	}
	at := bytes.Index(b, seqsMarker)
	if at < 0 {
		return 0, fmt.Errorf("writing %s: the header has no sequences field", path)
	}
	head, tail := b[:at+len(seqsMarker)-1], b[at+len(seqsMarker)-1:] // head ends with '[', tail starts with ']'
	f, err := os.CreateTemp(dir, "."+ManifestName+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<16)
	bw.Write(head)
	n := 0
	err = records(func(rec SeqRecord) error {
		rb, err := json.MarshalIndent(&rec, "    ", "  ")
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		_, err = bw.Write(rb)
		n++
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.Write(tail)
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("writing %s: fsync: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := verifyManifestFile(f, h.Sum(nil), n); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	f = nil
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("writing %s: rename: %w", path, err)
	}
	return n, syncDir(dir)
}

// verifyManifestFile re-reads a manifest just written, from its start,
// streaming: its bytes' sha256 must be sum and it must decode as a
// manifest of n sequences, each naming a file inside the dump.
func verifyManifestFile(f *os.File, sum []byte, n int) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	var hdr Manifest
	got := 0
	br := bufio.NewReaderSize(f, 1<<16)
	err := streamManifest(io.TeeReader(br, h), &hdr, func(r SeqRecord) error {
		if err := CheckSeqFileName(r.File); err != nil {
			return fmt.Errorf("sequences[%d].file: %w", got, err)
		}
		got++
		return nil
	})
	if err != nil {
		return fmt.Errorf("re-read: %w", err)
	}
	if _, err := io.Copy(h, br); err != nil { // what the decoder left unread: the trailing newline
		return err
	}
	switch {
	case hdr.Format != ManifestFormat:
		return fmt.Errorf("re-read: format %q, want %q", hdr.Format, ManifestFormat)
	case got != n:
		return fmt.Errorf("re-read: %d sequences, %d written", got, n)
	case !bytes.Equal(h.Sum(nil), sum):
		return fmt.Errorf("re-read: sha256 %x differs from the %x written", h.Sum(nil), sum)
	}
	return nil
}

// MaxManifestHeaderBytes bounds a manifest's fields other than sequences
// (4 MiB): they are held decoded, at 4-6 times their bytes for hostile
// lists and maps (edits of "", dims of "k":0) and 17 times for replicas
// of "k":{}, so a 2 GiB manifest of them held 12 to 35 GB. hsdb writes
// some KiB there.
const MaxManifestHeaderBytes = 4 << 20

// MaxReplicaKeys bounds the replicated tensors a dump's replicas record
// (manifest and journal together): hsdb records one per captured tensor
// (the layers and site tensors of one capture), and each takes some 190
// bytes held whatever its bytes in the file ("k":{}, 7).
const MaxReplicaKeys = 1 << 16

// checkReplicaKeys refuses n replica records past MaxReplicaKeys.
func checkReplicaKeys(n int) error {
	if n > MaxReplicaKeys {
		return fmt.Errorf("replicas records more than %d tensors (hsdb records one per captured tensor)", MaxReplicaKeys)
	}
	return nil
}

// streamManifest decodes a manifest.json from r without holding its
// sequences: hdr gets every other field, at most MaxManifestHeaderBytes
// of them; f is called with each sequence record in order. Memory: the
// largest single value, not the file. The
// other fields decode as json.Unmarshal decodes them: keys matched
// case-insensitively, in the file's order (a later key of one field wins,
// whatever its case; a field's objects given twice merge). A second
// "sequences" or anything after the object is refused, as Unmarshal would
// not read both lists nor data after the value. Errors: ErrManifest for
// bad JSON (wrapping the reader's error, such as regfile.ErrTooLarge; a
// file that ends inside the object is named cut short) or other fields
// past MaxManifestHeaderBytes (naming the field reached), or f's.
func streamManifest(r io.Reader, hdr *Manifest, f func(SeqRecord) error) error {
	dec := json.NewDecoder(r)
	bad := func(err error) error { return fmt.Errorf("%w: %w", ErrManifest, jsonerr.Explain(cutShort(err))) }
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("got %v", t)
			if d, ok := t.(json.Delim); ok && d == '[' {
				err = errors.New("got a JSON array")
			}
		} else if errors.Is(err, io.EOF) {
			err = errors.New("the file is empty")
		}
		return fmt.Errorf("%w: not a JSON object: %w", ErrManifest, jsonerr.Explain(err))
	}
	// The other fields, in the file's order, as one object: Unmarshal
	// then settles repeated keys (one spelled "format", the next
	// "Format") as it would in the whole file, the last one winning.
	var rest bytes.Buffer
	rest.WriteByte('{')
	seen := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		key, _ := t.(string)
		if !strings.EqualFold(key, "sequences") {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return bad(err)
			}
			if rest.Len()+len(raw) > MaxManifestHeaderBytes {
				return fmt.Errorf("%w: the fields other than sequences take more than %d bytes (at %s): hsdb writes some KiB there (the model's sizes, the captured layers and sites, edits, replica and validation records)",
					ErrManifest, MaxManifestHeaderBytes, QuoteFileText(key))
			}
			if rest.Len() > 1 {
				rest.WriteByte(',')
			}
			kb, _ := json.Marshal(key) // a string always encodes
			rest.Write(kb)
			rest.WriteByte(':')
			rest.Write(raw)
			continue
		}
		if seen {
			return bad(fmt.Errorf("sequences given twice"))
		}
		seen = true
		t, err = dec.Token()
		if err != nil {
			return bad(err)
		}
		if t == nil {
			continue
		}
		if t != json.Delim('[') {
			return bad(fmt.Errorf("sequences is not a list"))
		}
		for i := 0; dec.More(); i++ {
			var rec SeqRecord
			if err := dec.Decode(&rec); err != nil {
				return fmt.Errorf("%w: sequences[%d]: %w", ErrManifest, i, jsonerr.Explain(cutShort(err)))
			}
			if err := f(rec); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return bad(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return bad(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the manifest's object")
		}
		return fmt.Errorf("%w: %w", ErrManifest, jsonerr.Explain(err))
	}
	rest.WriteByte('}')
	if err := json.Unmarshal(rest.Bytes(), hdr); err != nil {
		return bad(err)
	}
	hdr.Sequences = nil
	return nil
}

// cutShort names the end of a manifest inside its object (the decoder's
// io.EOF or io.ErrUnexpectedEOF, a bare "EOF" in a message) as a file cut
// short; other errors are returned as they are.
func cutShort(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the file ends inside the manifest's object (cut short)")
	}
	return err
}
