package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped when a path names something other than a
// regular file (after symbolic links): a directory, named pipe, socket or
// device.
var ErrNotRegular = errors.New("not a regular file")

// ErrDanglingLink is wrapped when a path is a symbolic link whose target
// does not exist. It does not match fs.ErrNotExist: the entry is there,
// broken, and a reader for which the file is optional must not read it as
// absent.
var ErrDanglingLink = errors.New("symbolic link")

// ErrTooLarge is wrapped when a file is larger than the bound its reader
// accepts.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading and returns it only if it is a regular
// file. The open is non-blocking (O_NONBLOCK, which a regular file's reads
// ignore), so a named pipe returns at once and is refused here. Errors:
// the *fs.PathError of the open, ErrDanglingLink naming a symbolic link
// and its missing target, or ErrNotRegular naming the path and what it
// is.
func Open(path string) (*os.File, error) {
	f, _, err := openStat(path)
	return f, err
}

// openStat is Open that also returns the file's information.
func openStat(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, dangling(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	return f, st, nil
}

// OpenInput is Open for a file of commands or input the user names, where
// os.DevNull is also taken as the empty input it is (`hsdb -x /dev/null`
// runs no command): every other non-regular path is refused as Open does.
func OpenInput(path string) (*os.File, error) {
	if path == os.DevNull {
		return os.Open(path)
	}
	return Open(path)
}

// OpenBounded is Open for a regular file read as a stream whose content
// the reader keeps (a batch of token ids): a file over max bytes is
// refused with ErrTooLarge naming the path, its size and the bound before
// anything is read, and a read past max bytes (the file grew) fails with
// ErrTooLarge instead of returning more.
func OpenBounded(path string, max int64) (io.ReadCloser, error) {
	f, st, err := openStat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d accepted", path, ErrTooLarge, st.Size(), max)
	}
	return &bounded{File: f, path: path, max: max, left: max}, nil
}

// bounded is a file that fails with ErrTooLarge once more than its bound
// has been read.
type bounded struct {
	*os.File
	path string
	max  int64
	left int64 // bytes that may still be read
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left < int64(len(p)) {
		p = p[:b.left+1] // one byte more shows a file past the bound
	}
	n, err := b.File.Read(p)
	if int64(n) > b.left {
		return int(b.left), fmt.Errorf("%s: %w: more than %d bytes", b.path, ErrTooLarge, b.max)
	}
	b.left -= int64(n)
	return n, err
}

// ReadFile reads the regular file at path whole, if it holds at most max
// bytes. Errors: those of Open, or ErrTooLarge naming the path, its size
// and the bound (checked before anything is read, and again while reading
// in case the file grows).
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d accepted", path, ErrTooLarge, st.Size(), max)
	}
	limit := max
	if limit < math.MaxInt64 {
		limit++ // one byte more shows a file that grew past max
	}
	// One buffer of the size the file has (io.ReadAll grows from 512
	// bytes by doubling: a file of 480 MB cost about twice its size in
	// copies and garbage before it was parsed); a file that grows while
	// read still grows the buffer, up to limit.
	b := make([]byte, 0, min(st.Size(), max)+1)
	r := io.LimitReader(f, limit)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, max)
	}
	return b, nil
}

// Present reports whether path names a directory entry of any kind, a
// symbolic link whose target is missing included: a reader looking for
// one of several files (tokenizer.json, else tiktoken.model, ...) must
// take a broken link as the file present and failing to open (Open then
// names its target), not as absent, which os.Stat reports and which made
// hsdb fall through to another file without a word. Errors: those of
// lstat other than fs.ErrNotExist (a directory it may not search).
func Present(path string) (bool, error) {
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// dangling rewords err, the failed open of path, when path is a symbolic
// link whose target does not exist (an HF hub snapshot whose blob was
// never downloaded): "P is a symbolic link to T, which does not exist",
// wrapping ErrDanglingLink and not fs.ErrNotExist, so that a reader for
// which an absent file is optional (tokenizer_config.json, a dump's
// journal or manifest) does not take a broken one for absent. Other errors
// are returned as they are.
func dangling(path string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fi, lerr := os.Lstat(path)
	if lerr != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return err
	}
	target, rerr := os.Readlink(path)
	if rerr != nil {
		return err
	}
	return fmt.Errorf("%s is a %w to %s, which does not exist", path, ErrDanglingLink, target)
}

// kind names a non-regular file mode: "directory", "named pipe", ...
// Kind names what a file mode is, for errors: "a regular file", "a
// directory", "a named pipe", "a socket", "a character device", "a device",
// "a symbolic link" (a mode from Lstat),
// or "mode " and the mode's type bits.
func Kind(m fs.FileMode) string { return kind(m) }

func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0: // an Lstat's mode
		return "a symbolic link"
	}
	return "mode " + m.Type().String()
}
