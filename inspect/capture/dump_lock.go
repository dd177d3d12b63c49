package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLocked: another job (another process, or another dump in this one)
// is writing the same dump directory; the error names its pid.
var ErrLocked = errors.New("dump is being written by another job")

// LockName returns the path of the advisory lock of dump directory dir:
// ".BASE.lock" beside it (a dump's parent, not the dump, so that the lock
// outlives the renames of DIR.partial and DIR).
func LockName(dir string) string {
	dir = filepath.Clean(dir)
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".lock")
}

// dumpLock is an exclusive advisory lock on a dump path, held from
// CreateDump/ResumeDump to Finish, Abort or Close: flock(2) on LockName,
// which the kernel releases when the holder exits, however it exits (kill
// -9 included). The file holds the holder's pid, for the error a second
// job gets and for filesystems without flock, where a lock whose pid is
// no longer alive is stale and taken over. flock locks belong to an open
// file, so two jobs of one process exclude each other too (unlike fcntl
// locks); the lock file is removed on release, and a holder re-checks
// after locking that the path still names the file it locked.
//
// A dump to X.partial also holds X's lock (job), taken first: X.partial is
// the staging directory a batch job for X writes under X's lock, so a
// REPL `dump X.partial --force` must not replace it while that job runs
// (and a job for X must not resume it while such a dump replaces it).
type dumpLock struct {
	f    *os.File
	path string
	job  *dumpLock
}

// lockDump takes dir's lock without waiting, and, when dir is a batch
// job's staging directory X.partial, X's lock before it. Errors: ErrLocked
// naming the holder's pid (and, for X.partial, that it is job X's staging
// directory); the OS error of creating the lock file, named.
func lockDump(dir string) (*dumpLock, error) {
	var job *dumpLock
	if clean := filepath.Clean(dir); strings.HasSuffix(filepath.Base(clean), PartialSuffix) && filepath.Base(clean) != PartialSuffix {
		jobDir := strings.TrimSuffix(clean, PartialSuffix)
		j, err := lockOne(jobDir)
		if err != nil {
			return nil, fmt.Errorf("dump %s: it is the staging directory of a batch job for %s (hsdb capture --out %s): %w", dir, jobDir, jobDir, err)
		}
		job = j
	}
	l, err := lockOne(dir)
	if err != nil {
		job.release()
		return nil, err
	}
	l.job = job
	return l, nil
}

// lockOne takes the lock of dir alone (LockName), without waiting.
func lockOne(dir string) (*dumpLock, error) {
	path := LockName(dir)
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("dump %s: lock %s: %w", dir, path, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK):
			pid := readPid(f)
			f.Close()
			return nil, lockedErr(dir, path, pid)
		case errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL):
			// No flock here (some network filesystems): the pid decides.
			if pid := readPid(f); pid > 0 && pid != os.Getpid() && pidAlive(pid) {
				f.Close()
				return nil, lockedErr(dir, path, pid)
			}
		case err != nil:
			f.Close()
			return nil, fmt.Errorf("dump %s: lock %s: %w", dir, path, err)
		}
		// The holder before us may have removed the file between our open
		// and our flock: then we locked a file no one else will see.
		if !sameFile(f, path) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &dumpLock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("dump %s: lock %s: %w (it kept being replaced)", dir, path, ErrLocked)
}

func lockedErr(dir, path string, pid int) error {
	who := "another process"
	switch {
	case pid == os.Getpid():
		who = "another job of this process"
	case pid > 0 && pidAlive(pid):
		who = fmt.Sprintf("process %d", pid)
	case pid > 0:
		who = fmt.Sprintf("a process that inherited the lock of process %d (exited)", pid)
	}
	return fmt.Errorf("dump %s: %w: %s holds %s; wait for it to finish (a resumed job continues from what it wrote)", dir, ErrLocked, who, path)
}

// release removes the lock file and unlocks it (closing the file drops the
// flock), then the job lock it was taken under, if any. Safe to call twice.
func (l *dumpLock) release() {
	if l == nil || l.f == nil {
		return
	}
	if sameFile(l.f, l.path) {
		os.Remove(l.path)
	}
	l.f.Close()
	l.f = nil
	l.job.release()
	l.job = nil
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

func readPid(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}

// pidAlive reports whether a process of that pid exists (kill(pid, 0):
// EPERM means it exists under another user).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// tempPrefix is the name prefix of a one-shot dump's staging directories
// beside dir: ".BASE.tmp-PID-" (the pid of the writing process, so that a
// later dump can tell a dead process's leftovers).
func tempPrefix(dir string) string {
	return "." + filepath.Base(dir) + ".tmp-"
}

// removeStaleTemps removes the staging directories of earlier one-shot
// dumps of dir whose writer is dead (a kill -9 mid-dump leaves one): their
// pid, from the name, no longer runs, or the name has none (written before
// hsdb named them by pid, while no lock guarded dir). Only directories
// holding nothing but what hsdb writes are removed; the others are
// returned, to be named. The caller holds dir's lock.
func removeStaleTemps(dir string) (kept []string) {
	parent, prefix := filepath.Dir(dir), tempPrefix(dir)
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		pidText, _, _ := strings.Cut(strings.TrimPrefix(e.Name(), prefix), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid != os.Getpid() && pidAlive(pid) {
			continue
		}
		if err := hsdbOwned(p, true); err != nil {
			kept = append(kept, p)
			continue
		}
		os.RemoveAll(p)
	}
	return kept
}
