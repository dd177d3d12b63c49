package debug

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// publishSaved puts save's complete, verified temporary file tmp in place
// at path. savePathOK checked path before the tensor was computed; a file
// made at path since (another save, another process) must not be lost:
//   - without force, tmp is hard-linked to path, which fails when path
//     exists, so nothing made meanwhile is replaced, and tmp is removed;
//     on a file system without hard links it falls back to checking path
//     again just before the rename;
//   - with force, path is checked again (absent, or a file Save wrote:
//     savedByHsdb) just before the rename.
//
// Its refusals are *publishRefusal, which Save reports as they are (they
// name path and what is there now), not inside the write's own context.
func publishSaved(tmp, path string, force bool) error {
	if testHookBeforePublish != nil {
		testHookBeforePublish(path)
	}
	if !force {
		err := os.Link(tmp, path)
		switch {
		case err == nil:
			if rerr := os.Remove(tmp); rerr != nil {
				return fmt.Errorf("save %s: written, but removing its temporary name %s: %w", path, tmp, rerr)
			}
			return nil
		case errors.Is(err, fs.ErrExist):
			return madeMeanwhile(path)
		}
		// No hard links here (a FAT or FUSE mount): check again, then rename.
		if _, lerr := os.Lstat(path); !errors.Is(lerr, fs.ErrNotExist) {
			return madeMeanwhile(path)
		}
		return os.Rename(tmp, path)
	}
	if err := savePathOK(path, true); err != nil {
		return &publishRefusal{err}
	}
	return os.Rename(tmp, path)
}

// testHookBeforePublish, when set by a test, runs as publishSaved starts:
// another process's file appearing at path while save wrote.
var testHookBeforePublish func(path string)

// publishRefusal is publishSaved's refusal to put the file in place.
type publishRefusal struct{ err error }

func (r *publishRefusal) Error() string { return r.err.Error() }
func (r *publishRefusal) Unwrap() error { return r.err }

// madeMeanwhile is the refusal for a file made at path while save wrote.
func madeMeanwhile(path string) error {
	return &publishRefusal{fmt.Errorf("save %s: a file was made at that name while save wrote; nothing replaced: give --force to replace it (only a file save wrote), or choose another name", path)}
}

// asRefusal returns err's publishRefusal, which Save reports alone, and
// whether there is one.
func asRefusal(err error) (error, bool) {
	var r *publishRefusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}
