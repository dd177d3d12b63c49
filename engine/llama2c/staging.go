package llama2c

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"hsdb/engine/regfile"
)

// stagingMark is the file Convert puts first into its staging directory
// (.OUT.tmp-N beside --out): "hsdb convert llama2c staging pid P". A
// later Convert for the same --out removes a staging directory only when
// it holds this mark, P is no longer running, and nothing but the files
// Convert writes is in it; it is removed before the rename, so a finished
// conversion never holds it.
const stagingMark = ".hsdb-convert-staging"

// testHookWriter, when set by a test, wraps the writer of writeVerified
// for the file at path (to corrupt bytes on their way to the disk, as a
// bad medium would).
var testHookWriter func(path string, w io.Writer) io.Writer

// writeVerified writes data to path (fsynced), reads it back and compares:
// a file that does not read back as written is an error naming it.
func writeVerified(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var w io.Writer = f
	if testHookWriter != nil {
		w = testHookWriter(path, f)
	}
	_, err = w.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	back, err := regfile.ReadFile(path, int64(len(data))+1)
	if err != nil {
		return fmt.Errorf("reading back %s: %w", path, err)
	}
	if !bytes.Equal(back, data) {
		return fmt.Errorf("%s reads back as %d bytes that differ from the %d written", path, len(back), len(data))
	}
	return nil
}

// stagingName matches the names Convert stages outDir under:
// os.MkdirTemp(parent, ".BASE.tmp-") appends a decimal number.
func stagingName(outDir string) *regexp.Regexp {
	return regexp.MustCompile(`^\.` + regexp.QuoteMeta(filepath.Base(filepath.Clean(outDir))) + `\.tmp-[0-9]+$`)
}

// markStaging writes the staging mark with this process's id.
func markStaging(tmp string) error {
	return writeVerified(filepath.Join(tmp, stagingMark), []byte("hsdb convert llama2c staging pid "+strconv.Itoa(os.Getpid())+"\n"))
}

// removeStaleStaging removes the staging directories that an earlier,
// killed Convert for the same outDir left beside it, and only those: a
// directory (not a link) named .BASE.tmp-N, holding stagingMark whose
// process is gone, and otherwise only files Convert writes (config.json,
// model.safetensors or its temporary file, tokenizer.bin,
// tokenizer.model). Anything else is left as it is. Errors: a stale
// staging directory that cannot be removed.
func removeStaleStaging(outDir string) error {
	parent := filepath.Dir(filepath.Clean(outDir))
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil // the parent's own errors come with MkdirTemp
	}
	match := stagingName(outDir)
	for _, e := range entries {
		if !match.MatchString(e.Name()) || e.Type() != fs.ModeDir {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if !staleStaging(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing the stale staging directory %s: %w", dir, err)
		}
	}
	return nil
}

// staleStaging reports whether dir is a staging directory of a Convert
// that is no longer running (removeStaleStaging).
func staleStaging(dir string) bool {
	mark, err := regfile.ReadFile(filepath.Join(dir, stagingMark), 128)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(string(mark), "hsdb convert llama2c staging pid "), "\n"))
	if err != nil || pid <= 0 || !strings.HasPrefix(string(mark), "hsdb convert llama2c staging pid ") {
		return false
	}
	if pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false // still running (or not ours to ask): left alone
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		ok := n == stagingMark || n == "config.json" || n == "model.safetensors" || n == "tokenizer.bin" || n == "tokenizer.model" ||
			strings.HasPrefix(n, ".model.safetensors.tmp-")
		if !ok || !e.Type().IsRegular() {
			return false
		}
	}
	return true
}
