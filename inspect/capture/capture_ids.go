package capture

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
)

// The duplicate-id check of a streamed --data file (OpenJSONL) in bounded
// memory, as an external sort finds repeated keys: each row's id is kept
// as a 128-bit FNV-1a digest with the row's index in a buffer of at most
// idRunCap entries; a full buffer is sorted and spilled to a temporary
// file (unnamed from its creation: idTempFile) as a sorted run, and at
// idMaxRuns runs they are merged into one (in a new file, the old one
// closed), so memory holds one buffer and idMaxRuns small read buffers
// whatever the file's length. At the end the
// runs and the buffer are merged: entries with equal digests are rows
// whose ids are probably equal; the few pairs with the earliest second
// row are then confirmed by reading those rows' ids again (a digest
// collision is not a duplicate).

// idRunCap and idMaxRuns bound the check's memory (24 bytes per entry: 6
// MiB of buffer); tests lower them.
var (
	idRunCap  = 1 << 18
	idMaxRuns = 64
)

// idEntry is one row: its id's digest and index.
type idEntry struct {
	hi, lo uint64
	row    int64
}

func (a idEntry) less(b idEntry) bool {
	if a.hi != b.hi {
		return a.hi < b.hi
	}
	if a.lo != b.lo {
		return a.lo < b.lo
	}
	return a.row < b.row
}

const idEntryBytes = 24

// idCheck collects the rows' id digests (add) and finds the candidate
// duplicates (candidates).
type idCheck struct {
	buf  []idEntry
	tmp  *os.File // sorted runs one after another; nil before the first spill
	runs []idRun
}

type idRun struct{ off, n int64 }

// dupPair is two rows, first < second, whose ids have one digest.
type dupPair struct{ first, second int64 }

func idDigest(id string) (hi, lo uint64) {
	h := fnv.New128a()
	h.Write([]byte(id))
	var b [16]byte
	h.Sum(b[:0])
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// add records row's id; a full buffer is spilled. Errors are the
// temporary file's.
func (c *idCheck) add(id string, row int) error {
	hi, lo := idDigest(id)
	return c.addEntry(idEntry{hi, lo, int64(row)})
}

// addEntry records one entry (any key: the journal's sort, dump_stream.go,
// keys by input index and journal offset); a full buffer is spilled.
func (c *idCheck) addEntry(e idEntry) error {
	c.buf = append(c.buf, e)
	if len(c.buf) < idRunCap {
		return nil
	}
	return c.spill()
}

// spill writes the sorted buffer as a run; at idMaxRuns runs, merges them.
func (c *idCheck) spill() error {
	sortEntries(c.buf)
	if c.tmp == nil {
		f, err := idTempFile()
		if err != nil {
			return err
		}
		c.tmp = f
	}
	off, err := c.tmp.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(c.tmp, 1<<16)
	var b [idEntryBytes]byte
	for _, e := range c.buf {
		binary.LittleEndian.PutUint64(b[0:], e.hi)
		binary.LittleEndian.PutUint64(b[8:], e.lo)
		binary.LittleEndian.PutUint64(b[16:], uint64(e.row))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("the external sort's temporary file (duplicate ids, journal order): %w", err)
	}
	c.runs = append(c.runs, idRun{off, int64(len(c.buf))})
	c.buf = c.buf[:0]
	if len(c.runs) < idMaxRuns {
		return nil
	}
	// Merge every run into one, in a new file.
	f, err := idTempFile()
	if err != nil {
		return err
	}
	w = bufio.NewWriterSize(f, 1<<16)
	var n int64
	err = c.merge(nil, func(e idEntry) error {
		binary.LittleEndian.PutUint64(b[0:], e.hi)
		binary.LittleEndian.PutUint64(b[8:], e.lo)
		binary.LittleEndian.PutUint64(b[16:], uint64(e.row))
		n++
		_, err := w.Write(b[:])
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("the external sort's temporary file (duplicate ids, journal order): %w", err)
	}
	c.close()
	c.tmp, c.runs = f, []idRun{{0, n}}
	return nil
}

// idCursor reads one sorted run, or the sorted buffer.
type idCursor struct {
	r    *bufio.Reader
	mem  []idEntry
	left int64
	cur  idEntry
}

func (k *idCursor) next() (bool, error) {
	if k.r == nil {
		if len(k.mem) == 0 {
			return false, nil
		}
		k.cur, k.mem = k.mem[0], k.mem[1:]
		return true, nil
	}
	if k.left == 0 {
		return false, nil
	}
	var b [idEntryBytes]byte
	if _, err := io.ReadFull(k.r, b[:]); err != nil {
		return false, fmt.Errorf("the external sort's temporary file (duplicate ids, journal order): %w", err)
	}
	k.left--
	k.cur = idEntry{binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:]), int64(binary.LittleEndian.Uint64(b[16:]))}
	return true, nil
}

type idHeap []*idCursor

func (h idHeap) Len() int           { return len(h) }
func (h idHeap) Less(i, j int) bool { return h[i].cur.less(h[j].cur) }
func (h idHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *idHeap) Push(x any)        { *h = append(*h, x.(*idCursor)) }
func (h *idHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// merge calls f with every entry of the runs and of mem (sorted) in
// order.
func (c *idCheck) merge(mem []idEntry, f func(idEntry) error) error {
	var h idHeap
	for _, r := range c.runs {
		k := &idCursor{r: bufio.NewReaderSize(io.NewSectionReader(c.tmp, r.off, r.n*idEntryBytes), 4096), left: r.n}
		ok, err := k.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, k)
		}
	}
	if len(mem) > 0 {
		k := &idCursor{mem: mem}
		k.next()
		h = append(h, k)
	}
	heap.Init(&h)
	for h.Len() > 0 {
		k := h[0]
		if err := f(k.cur); err != nil {
			return err
		}
		ok, err := k.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// sortEntries sorts es by digest (hi, lo), then row.
func sortEntries(es []idEntry) {
	slices.SortFunc(es, func(a, b idEntry) int {
		if a.less(b) {
			return -1
		}
		if b.less(a) {
			return 1
		}
		return 0
	})
}

// each calls f with every entry added, runs and buffer, in sorted order.
func (c *idCheck) each(f func(idEntry) error) error {
	mem := slices.Clone(c.buf)
	sortEntries(mem)
	return c.merge(mem, f)
}

// candidates returns, of the groups of rows whose ids share a digest, at
// most k pairs (the group's first two rows) with the earliest second
// rows, in that order.
func (c *idCheck) candidates(k int) ([]dupPair, error) {
	mem := slices.Clone(c.buf)
	sortEntries(mem)
	var out []dupPair
	var prev idEntry
	inGroup, have := false, false
	err := c.merge(mem, func(e idEntry) error {
		if have && e.hi == prev.hi && e.lo == prev.lo {
			if !inGroup { // prev is the group's first row, e its second (rows ascend within a digest)
				p := dupPair{prev.row, e.row}
				i, _ := slices.BinarySearchFunc(out, p, func(a, b dupPair) int { return int(a.second - b.second) })
				if i < k {
					out = slices.Insert(out, i, p)
					if len(out) > k {
						out = out[:k]
					}
				}
				inGroup = true
			}
			return nil
		}
		prev, have, inGroup = e, true, false
		return nil
	})
	return out, err
}

// close closes the temporary file (its name is gone already: idTempFile).
func (c *idCheck) close() {
	if c.tmp != nil {
		c.tmp.Close()
		c.tmp = nil
	}
}

// idTempFile creates the check's temporary file in os.TempDir and removes
// its name at once: the open file is read and written through its
// descriptor and freed when it is closed or the process ends, so a
// validation pass stopped by SIGTERM, Ctrl-C or kill -9 (before the job's
// signal handling, while a long --data file is read) leaves no file of
// 24 bytes per row behind.
func idTempFile() (*os.File, error) {
	f, err := os.CreateTemp("", "hsdb-ids-*")
	if err != nil {
		return nil, fmt.Errorf("the external sort's temporary file (duplicate ids, journal order): %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("the external sort's temporary file (duplicate ids, journal order): %w", err)
	}
	return f, nil
}

// firstDuplicate returns the error naming the earliest row (below limit)
// whose id an earlier row has — "FILE:LINE: sequences I and J share the
// id ..." — confirmed by reading both rows' ids again with r (a fresh
// reader of the file); nil when there is none.
func (c *idCheck) firstDuplicate(in *Inputs, path string, limit int) error {
	pairs, err := c.candidates(8)
	if err != nil {
		return err
	}
	pairs = slices.DeleteFunc(pairs, func(p dupPair) bool { return p.second >= int64(limit) })
	if len(pairs) == 0 {
		return nil
	}
	want := map[int64]bool{}
	last := int64(0)
	for _, p := range pairs {
		want[p.first], want[p.second] = true, true
		last = max(last, p.second)
	}
	r, err := in.Rows()
	if err != nil {
		return err
	}
	defer r.Close()
	ids, lines := map[int64]string{}, map[int64]int{}
	for {
		i, s, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if want[int64(i)] {
			ids[int64(i)], lines[int64(i)] = s.ID, r.line
		}
		if int64(i) >= last {
			break
		}
	}
	for _, p := range pairs {
		if a, ok := ids[p.first]; ok && a == ids[p.second] {
			return fmt.Errorf("%s:%d: sequences %d and %d share the id %q", path, lines[p.second], p.second, p.first, a)
		}
	}
	return nil
}
