package capture

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"hsdb/engine/regfile"
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
	hasManifest, err := eachListed(dir, nil)
	switch {
	case err == nil && (hasManifest || staging):
	case err == nil:
		return fmt.Errorf("%w: %s has no hsdb manifest (%v)", ErrNotDump, dir, fs.ErrNotExist)
	default:
		return fmt.Errorf("%w: %s has no hsdb manifest (%v)", ErrNotDump, dir, err)
	}
	// Names hsdb does not give its files are allowed only when the
	// manifest (or the journal) lists them: collected here (a few at most;
	// more is not a dump hsdb wrote) and looked up in a second streamed
	// read, so that no set of every listed file is held.
	foreign := map[string]bool{}
	var ferr error
	eachEntry(dir, func(n string, isDir bool) {
		if ferr != nil {
			return
		}
		if isDir && specforgeDir.MatchString(n) { // SpecForge's rows_ grouping: only hsdb's samples inside
			eachEntry(filepath.Join(dir, n), func(f string, _ bool) {
				if fi, err := os.Lstat(filepath.Join(dir, n, f)); ferr == nil && (err != nil || !fi.Mode().IsRegular() || !specforgeName.MatchString(f)) {
					ferr = fmt.Errorf("%w: %s holds %s, which hsdb did not write", ErrNotDump, dir, FileText(n+"/"+f))
				}
			})
			return
		}
		fi, err := os.Lstat(filepath.Join(dir, n))
		regular := err == nil && fi.Mode().IsRegular()
		switch {
		case (n == ManifestName || n == JournalName) && !regular:
			ferr = fmt.Errorf("%w: %s in %s is not a regular file", ErrNotDump, FileText(n), dir)
		case n == ManifestName || n == JournalName || (regular && hsdbFileName.MatchString(n)):
		case len(foreign) >= maxForeign:
			ferr = fmt.Errorf("%w: %s holds %s, which hsdb did not write", ErrNotDump, dir, FileText(n))
		default:
			foreign[n] = regular
		}
	})
	if ferr != nil || len(foreign) == 0 {
		return ferr
	}
	if _, err := eachListed(dir, func(name string) {
		if regular, ok := foreign[name]; ok && regular {
			delete(foreign, name)
		}
	}); err != nil {
		return fmt.Errorf("%w: %s has no hsdb manifest (%v)", ErrNotDump, dir, err)
	}
	if len(foreign) > 0 {
		n := slices.Min(slices.Collect(maps.Keys(foreign)))
		if _, err := eachListed(dir, func(name string) {
			if name == n {
				ferr = fmt.Errorf("%w: %s in %s is not a regular file", ErrNotDump, FileText(n), dir)
			}
		}); err == nil && ferr != nil {
			return ferr
		}
		return fmt.Errorf("%w: %s holds %s, which hsdb did not write", ErrNotDump, dir, FileText(n))
	}
	return nil
}

// maxForeign bounds the names hsdbOwned looks up in a manifest: files
// hsdb did not name as it names its own.
const maxForeign = 64

// eachListed streams DIR/manifest.json (streamManifest) and DIR's journal,
// calling f, when not nil, with every file they list. It reports whether
// the manifest is there; errors: ErrManifest (bad JSON, another format, a
// file name leaving the dump) or the file's.
func eachListed(dir string, f func(name string)) (bool, error) {
	p := filepath.Join(dir, ManifestName)
	mf, err := regfile.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer mf.Close()
	var hdr Manifest
	i := 0
	err = streamManifest(bufio.NewReaderSize(mf, 1<<16), &hdr, func(r SeqRecord) error {
		if err := CheckSeqFileName(r.File); err != nil {
			return fmt.Errorf("%s: %w: sequences[%d].file: %v", p, ErrManifest, i, err)
		}
		i++
		if f != nil {
			f(r.File)
		}
		return nil
	})
	if err != nil {
		return true, err
	}
	if hdr.Format != ManifestFormat {
		return true, fmt.Errorf("%s: %w: format %s, want %q", p, ErrManifest, QuoteFileText(hdr.Format), ManifestFormat)
	}
	jf, err := regfile.Open(filepath.Join(dir, JournalName))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return true, err
	}
	defer jf.Close()
	r := bufio.NewReaderSize(jf, 1<<16)
	var buf []byte
	for {
		line, ok, err := readLine(r, buf)
		buf = line
		var e journalEntry
		if err != nil || !ok || json.Unmarshal(line, &e) != nil {
			return true, nil // the journal ends at its first line that is not a whole entry (journalRecords)
		}
		if e.Seq != nil && f != nil && CheckSeqFileName(e.Seq.File) == nil {
			f(e.Seq.File)
		}
	}
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
