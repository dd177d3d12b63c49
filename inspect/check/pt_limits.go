package check

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nlpodyssey/gopickle/types"
)

// The bounds ReadTorch holds a torch.save file to, so that a hostile or
// corrupt file (a zip bomb, a pickle memoising one list a million times, a
// self-referencing list, an expanded view of a huge size) is refused with
// the limit it hit instead of exhausting memory or time. Each is checked
// before the work it bounds is done: entry sizes from the zip directory
// before inflating, the expanded value count from the pickle's object graph
// before the tree is built, a view's element count before it is copied.
// Python's own torch.load has no such bounds (it trusts its input); these
// are set far above what any capture file torch.save writes needs.
const (
	// MaxPickleBytes bounds data.pkl's declared uncompressed size. A pickle
	// holds only structure (tensors live in data/KEY records): a capture
	// of 100,000 tensors needs about 20 MB.
	MaxPickleBytes = 64 << 20
	// MaxRecordSlack bounds what the records read (data.pkl and storages)
	// may inflate to in total: the file's size on disk plus this much (and
	// never more than the host's MemAvailable).
	// torch.save stores records uncompressed, so a real file reads about
	// its own size; a compressed archive may inflate this much beyond it.
	MaxRecordSlack = 256 << 20
	// MaxPickleValues bounds the values of the object tree after shared
	// references are expanded (a memoised list referenced N times counts
	// N times): dicts, lists, tuples, scalars and tensors.
	MaxPickleValues = 1 << 20
	// MaxPickleObjects bounds the objects data.pkl's opcodes create
	// (literals, containers, call results; a memo get or DUP creates
	// none), counted by the scan before anything is unpickled: the
	// unpickler holds every one of them at once when the pickle keeps
	// them on its stack, in a container or in its memo, and one byte of
	// opcode (an empty list) costs it about 40 bytes, so a 60 MB data.pkl
	// of "]" took gigabytes before MaxPickleValues, which looks at the
	// finished tree, or MaxUnpickleTime stopped it. torch.save creates
	// about 25 objects per tensor: 4M allows 160,000 tensors.
	MaxPickleObjects = 1 << 22
	// MaxZipEntries bounds the records a torch.save archive's central
	// directory lists (data.pkl, byteorder, version, one data/KEY per
	// storage): archive/zip holds about 300 bytes for each before any is
	// read, so a 100 MB file of a million empty records took 365 MB, and
	// a directory of gigabytes would take tens. torch.save writes one
	// record per storage: 512k allows more tensors than MaxPickleObjects.
	MaxZipEntries = 1 << 19
	// MaxPickleDepth bounds how deeply containers nest.
	MaxPickleDepth = 64
	// MaxViewSlack bounds the tensors rebuilt from views: their bytes may
	// total at most 4 × the storages' bytes plus this much (a view never
	// exceeds its storage unless it is expanded with zero strides or its
	// rows overlap).
	MaxViewSlack = 1 << 20
	// MaxUnpickleTime bounds the time spent unpickling data.pkl: a
	// backstop behind the bounds above, which bound the work itself. At
	// 10 s it refused torch.save's own list of 70,000 tensors (2.7 s on an
	// idle host) on a host loaded by other jobs.
	MaxUnpickleTime = 60 * time.Second
)

// ErrLimit marks a capture file refused because reading it would pass one
// of ReadTorch's bounds (MaxPickleBytes, MaxRecordSlack, MaxZipEntries, MaxPickleObjects, MaxPickleValues,
// MaxPickleDepth, MaxViewSlack, MaxUnpickleTime), or holding it would pass
// the host's available memory (ReadCaptureFile). It is always wrapped
// together with ErrUnreadable.
var ErrLimit = errors.New("resource limit")

// limitErr is an error naming the bound that refused the file.
func limitErr(format string, args ...any) error {
	return fmt.Errorf("%w (%w): %s", ErrUnreadable, ErrLimit, fmt.Sprintf(format, args...))
}

// budget tracks the bytes inflated from records and materialised into
// tensors while one archive is read.
type budget struct {
	recordLimit, recordUsed int64  // declared uncompressed bytes of records opened
	recordWhy               string // what recordLimit is: "the file's size + 256 MiB", or the host's memory
	storageBytes, viewBytes int64  // storages read; tensors rebuilt from them
}

// takeRecord charges f's declared uncompressed size, refusing it before
// anything is inflated when the total would pass the limit.
func (b *budget) takeRecord(f *zip.File) error {
	n := int64(f.UncompressedSize64)
	if f.UncompressedSize64 > 1<<62 || b.recordUsed+n > b.recordLimit {
		why := b.recordWhy
		if why == "" {
			why = fmt.Sprintf("the file's size + %d MiB", MaxRecordSlack>>20)
		}
		return limitErr("record %s declares %d bytes uncompressed (%d stored); the records read may total at most %d bytes (%s)",
			f.Name, f.UncompressedSize64, f.CompressedSize64, b.recordLimit, why)
	}
	b.recordUsed += n
	return nil
}

// takeView charges a rebuilt tensor of n bytes.
func (b *budget) takeView(n int64, key string) error {
	if limit := 4*b.storageBytes + MaxViewSlack; b.viewBytes+n > limit {
		return limitErr("a view over storage %s makes the tensors rebuilt total %d bytes; at most %d (4 × the %d bytes of storage + %d MiB)",
			key, b.viewBytes+n, limit, b.storageBytes, MaxViewSlack>>20)
	}
	b.viewBytes += n
	return nil
}

// readRecordWithin reads a zip record of at most limit bytes after charging
// its declared size to the budget; a record whose stream is longer than it
// declares is an error of archive/zip (zip.ErrFormat).
func (b *budget) readRecordWithin(f *zip.File, limit int64) ([]byte, error) {
	if err := b.takeRecord(f); err != nil {
		return nil, err
	}
	return readRecord(f, limit)
}

// deadlineReader feeds the unpickler its bytes and fails once the deadline
// has passed (checked every 64 KiB and on every byte read after the first
// check fails), so that no pickle, however crafted, keeps ReadTorch busy
// past MaxUnpickleTime.
type deadlineReader struct {
	data     []byte
	pos      int
	next     int // position of the next clock check
	deadline time.Time
}

func (r *deadlineReader) check() error {
	if r.pos >= r.next {
		r.next = r.pos + 64<<10
		if time.Now().After(r.deadline) {
			r.next = r.pos
			return limitErr("unpickling data.pkl took longer than %v (stopped at byte %d of %d)", MaxUnpickleTime, r.pos, len(r.data))
		}
	}
	return nil
}

// Read implements io.Reader.
func (r *deadlineReader) Read(p []byte) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	if r.pos >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.pos:])
	r.pos += n
	return n, nil
}

// ReadByte implements io.ByteReader.
func (r *deadlineReader) ReadByte() (byte, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	if r.pos >= len(r.data) {
		return 0, io.EOF
	}
	c := r.data[r.pos]
	r.pos++
	return c, nil
}

// expandedSize counts the values toValue would build from v, expanding
// shared references, without building them: each container's count is
// computed once (memoised by identity), so the walk costs the size of the
// object graph gopickle built (linear in the pickle), not of its expansion.
// It fails as soon as the count passes MaxPickleValues, the nesting passes
// MaxPickleDepth, or a container holds itself.
func expandedSize(root interface{}) error {
	done := map[any]int{}
	open := map[any]bool{}
	var walk func(v interface{}, depth int) (int, error)
	children := func(v interface{}) (key any, items []interface{}) {
		switch x := v.(type) {
		case *types.List:
			return x, *x
		case *types.Tuple:
			return x, *x
		case *types.Dict:
			items = make([]interface{}, 0, 2*len(*x))
			for _, e := range *x {
				items = append(items, e.Value)
			}
			return x, items
		case *types.OrderedDict:
			for el := x.List.Front(); el != nil; el = el.Next() {
				if e, ok := el.Value.(*types.OrderedDictEntry); ok {
					items = append(items, e.Value)
				}
			}
			return x, items
		}
		return nil, nil
	}
	walk = func(v interface{}, depth int) (int, error) {
		key, items := children(v)
		if key == nil {
			return 1, nil
		}
		if depth > MaxPickleDepth {
			return 0, limitErr("containers nested deeper than %d levels", MaxPickleDepth)
		}
		if n, ok := done[key]; ok {
			return n, nil
		}
		if open[key] {
			return 0, fmt.Errorf("%w: a %T that contains itself", ErrUnreadable, v)
		}
		open[key] = true
		n := 1
		for _, it := range items {
			c, err := walk(it, depth+1)
			if err != nil {
				return 0, err
			}
			if n += c; n > MaxPickleValues {
				return 0, limitErr("the pickle expands to more than %d values (shared references counted each time they are used)", MaxPickleValues)
			}
		}
		delete(open, key)
		done[key] = n
		return n, nil
	}
	_, err := walk(root, 0)
	return err
}
