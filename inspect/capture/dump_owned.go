package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNotDump: --force was asked to replace a path hsdb did not write (an
// ordinary file, a directory holding other files, a home directory).
var ErrNotDump = errors.New("not an hsdb dump")

// hsdbFileName matches what a dump directory may hold besides its
// manifest and journal: sequence files and the temporaries of their and
// the manifest's atomic writes (safetensors.WriteFile, writeFileAtomic).
var hsdbFileName = regexp.MustCompile(`^(seq_[0-9]{6,}\.safetensors|\.seq_[0-9]{6,}\.safetensors\.tmp-[0-9]+|\.(manifest\.json|journal\.jsonl)\.tmp-[0-9]+|\.?hs_[0-9]+\.safetensors(\.tmp-[0-9]+)?)$`)

// specforgeDir and specforgeName match SpecForge's grouping directories
// (rows_{g}-{g+2000}) and what hsdb writes in them: data_{idx}.ckpt[.gz]
// and the temporaries of their atomic writes.
var (
	specforgeDir  = regexp.MustCompile(`^rows_[0-9]+-[0-9]+$`)
	specforgeName = regexp.MustCompile(`^\.?data_[0-9]+\.ckpt(\.gz)?(\.tmp-[0-9]+)?$`)
)

// hsdbOwned checks that dir holds only what hsdb writes, so that --force
// (and the clean-up of a dead job's staging directory) may remove it: a
// real directory (not a symbolic link, not the home directory, the root
// or a directory above the working one) whose manifest.json is an hsdb
// dump manifest listing its files, with nothing else in it but hsdb's own
// temporaries. A staging directory (staging true) may lack the manifest
// when a kill came before it was written; then its files must all be named
// as hsdb names them. Errors: ErrNotDump saying what dir is or the first
// file hsdb did not write.
func hsdbOwned(dir string, staging bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link", ErrNotDump, dir)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is a %s", ErrNotDump, dir, kindOf(fi))
	}
	if why := protectedDir(dir); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrNotDump, dir, why)
	}
	listed := map[string]bool{}
	m, err := ReadManifest(dir)
	switch {
	case err == nil:
		for _, r := range m.Sequences {
			listed[r.File] = true
		}
	case staging && errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("%w: %s has no hsdb manifest (%v)", ErrNotDump, dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() && specforgeDir.MatchString(n) { // SpecForge's rows_ grouping: only hsdb's samples inside
			sub, err := os.ReadDir(filepath.Join(dir, n))
			if err != nil {
				return err
			}
			for _, f := range sub {
				if !f.Type().IsRegular() || !(listed[n+"/"+f.Name()] || specforgeName.MatchString(f.Name())) {
					return fmt.Errorf("%w: %s holds %s/%s, which hsdb did not write", ErrNotDump, dir, n, f.Name())
				}
			}
			continue
		}
		if n == ManifestName || n == JournalName || listed[n] {
			if !e.Type().IsRegular() {
				return fmt.Errorf("%w: %s in %s is not a regular file", ErrNotDump, n, dir)
			}
			continue
		}
		if !e.Type().IsRegular() || !hsdbFileName.MatchString(n) {
			return fmt.Errorf("%w: %s holds %s, which hsdb did not write", ErrNotDump, dir, n)
		}
	}
	return nil
}

// protectedDir says why dir may never be replaced ("" when it may): the
// filesystem root, the user's home directory, the working directory or
// one above it.
func protectedDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "a path that cannot be made absolute"
	}
	if abs == filepath.Dir(abs) {
		return "the filesystem root"
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.Abs(home); err == nil && (h == abs || strings.HasPrefix(h, abs+string(filepath.Separator))) {
			return "the home directory or one above it"
		}
	}
	if wd, err := os.Getwd(); err == nil && (wd == abs || strings.HasPrefix(wd, abs+string(filepath.Separator))) {
		return "the working directory or one above it"
	}
	return ""
}

func kindOf(fi fs.FileInfo) string {
	switch {
	case fi.Mode().IsRegular():
		return "regular file"
	case fi.Mode()&fs.ModeNamedPipe != 0:
		return "named pipe"
	case fi.Mode()&fs.ModeDevice != 0:
		return "device"
	case fi.Mode()&fs.ModeSocket != 0:
		return "socket"
	}
	return "file of mode " + fi.Mode().String()
}
