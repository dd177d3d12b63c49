package llama2c

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const storiesBin = "../../testdata/stories260K/stories260K.bin"

// flipWriter corrupts the last byte of every write, as a bad medium would.
type flipWriter struct{ w io.Writer }

func (f flipWriter) Write(p []byte) (int, error) {
	q := append([]byte(nil), p...)
	if len(q) > 0 {
		q[len(q)-1] ^= 0xff
	}
	return f.w.Write(q)
}

// TestConvertReadsBack: config.json and the tokenizer are read back and
// compared before the rename: a write that lands corrupted fails naming
// the file, and nothing is left at --out or beside it.
func TestConvertReadsBack(t *testing.T) {
	defer func() { testHookWriter = nil }()
	for _, bad := range []string{"config.json", "tokenizer.bin"} {
		testHookWriter = func(path string, w io.Writer) io.Writer {
			if filepath.Base(path) == bad {
				return flipWriter{w}
			}
			return w
		}
		parent := t.TempDir()
		out := filepath.Join(parent, "out")
		err := Convert(storiesBin, []string{"../../testdata/stories260K/tok512.bin"}, out, false)
		if err == nil || !strings.Contains(err.Error(), bad+" reads back as") {
			t.Fatalf("Convert with %s corrupted on write: %v, want a read-back mismatch naming it", bad, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Fatalf("%s corrupted: left behind %v", bad, ents)
		}
	}
}

// deadPID returns the id of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	return cmd.Process.Pid
}

// TestConvertRemovesStaleStaging: a staging directory that a killed
// convert for the same --out left (hsdb's mark, its process gone, only
// the files convert writes) is removed by the next convert; one whose
// process still runs, one without the mark, one holding another file,
// one for another --out and a symbolic link by the same pattern stay.
func TestConvertRemovesStaleStaging(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	dead := "hsdb convert llama2c staging pid " + strconv.Itoa(deadPID(t)) + "\n"
	live := "hsdb convert llama2c staging pid " + strconv.Itoa(os.Getppid()) + "\n"
	mk := func(name string, files map[string]string) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(d, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	stale := mk(".out.tmp-111", map[string]string{stagingMark: dead, "config.json": "{}", ".model.safetensors.tmp-9": "cut"})
	keep := []string{
		mk(".out.tmp-222", map[string]string{stagingMark: live, "config.json": "{}"}),
		mk(".out.tmp-333", map[string]string{"config.json": "{}"}),
		mk(".out.tmp-444", map[string]string{stagingMark: dead, "notes.txt": "mine"}),
		mk(".other.tmp-555", map[string]string{stagingMark: dead}),
		mk(".out.tmp-666x", map[string]string{stagingMark: dead}),
	}
	target := mk("target", map[string]string{stagingMark: dead})
	link := filepath.Join(parent, ".out.tmp-777")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, link, target)
	if err := Convert(storiesBin, nil, out, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale staging directory %s is still there", stale)
	}
	for _, k := range keep {
		if _, err := os.Lstat(k); err != nil {
			t.Errorf("%s was removed: %v", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(target, stagingMark)); err != nil {
		t.Errorf("the link's target was emptied: %v", err)
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "config.json,model.safetensors" {
		t.Errorf("--out holds %v, want config.json and model.safetensors only", names)
	}
}
