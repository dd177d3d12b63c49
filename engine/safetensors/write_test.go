package safetensors

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"hsdb/engine/tensor"
)

func TestWriteRejects(t *testing.T) {
	one := tensor.FromF32([]float32{1}, 1)
	short := &tensor.Tensor{Shape: []int{2, 3}, DType: tensor.F32, Data: make([]byte, 20)} // needs 24
	cases := []struct {
		name string
		in   []Named
		want error
		frag string
	}{
		{"duplicate", []Named{{"a", one}, {"b", one}, {"a", one}}, ErrDuplicateName, `"a"`},
		{"data length", []Named{{"w", short}}, ErrBadTensor, "needs 24 bytes of data, found 20"},
		{"nil", []Named{{"w", nil}}, ErrBadTensor, "nil tensor"},
		{"empty name", []Named{{"", one}}, ErrBadTensor, "empty name"},
		{"reserved name", []Named{{"__metadata__", one}}, ErrBadTensor, "reserved"},
		{"invalid dtype", []Named{{"w", &tensor.Tensor{Shape: []int{1}, DType: tensor.Invalid}}}, ErrBadTensor, "no safetensors name"},
		{"negative dim", []Named{{"w", &tensor.Tensor{Shape: []int{-1}, DType: tensor.F32}}}, ErrBadTensor, "negative"},
		{"bad utf8 name", []Named{{"w\xff", one}}, ErrBadTensor, "UTF-8"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		err := Write(&b, c.in, nil)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("%s: err = %v, want %v containing %q", c.name, err, c.want, c.frag)
		}
		if b.Len() != 0 {
			t.Errorf("%s: %d bytes written before the error", c.name, b.Len())
		}
	}
	if err := Write(io.Discard, []Named{{"a", one}}, map[string]string{"k": "\xff"}); !errors.Is(err, ErrMetadata) {
		t.Errorf("bad metadata: err = %v, want ErrMetadata", err)
	}
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.safetensors")
	if err := os.WriteFile(p, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := []Named{{"h", tensor.FromF32([]float32{1, 2, 3, 4}, 2, 2)}, {"ids", tensor.FromI64([]int64{5, 6}, 2)}}
	if err := WriteFile(p, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{"out.safetensors"}) {
		t.Errorf("directory holds %v, want only out.safetensors", got)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	var want bytes.Buffer
	if err := Write(&want, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want.Len() == 0 || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("WriteFile and Write differ")
	}
}

// TestWriteFileFailuresLeaveNoTemp makes WriteFile fail at each step and
// checks the directory is left exactly as it was.
func TestWriteFileFailuresLeaveNoTemp(t *testing.T) {
	in := []Named{{"h", tensor.FromF32([]float32{1, 2, 3, 4}, 2, 2)}}

	t.Run("data length mismatch", func(t *testing.T) {
		dir := t.TempDir()
		bad := []Named{{"h", &tensor.Tensor{Shape: []int{4}, DType: tensor.F32, Data: make([]byte, 15)}}}
		err := WriteFile(filepath.Join(dir, "x.safetensors"), bad, nil)
		if !errors.Is(err, ErrBadTensor) || !strings.Contains(err.Error(), "x.safetensors") {
			t.Errorf("err = %v, want ErrBadTensor naming the file", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("left %v", got)
		}
	})

	t.Run("rename onto a directory", func(t *testing.T) {
		// The temporary is written, synced and verified; the rename fails
		// because the target is a non-empty directory.
		dir := t.TempDir()
		target := filepath.Join(dir, "x.safetensors")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, "keep"), []byte("k"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := WriteFile(target, in, nil)
		if err == nil || !strings.Contains(err.Error(), "renaming") {
			t.Fatalf("err = %v, want a rename failure", err)
		}
		if got := dirEntries(t, dir); !slices.Equal(got, []string{"x.safetensors"}) {
			t.Errorf("directory holds %v, want only the original x.safetensors", got)
		}
	})

	t.Run("disk full", func(t *testing.T) {
		dir := t.TempDir()
		testHookWriter = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 70, err: syscall.ENOSPC} }
		defer func() { testHookWriter = nil }()
		err := WriteFile(filepath.Join(dir, "x.safetensors"), in, nil)
		if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "ENOSPC") {
			t.Errorf("err = %v, want ErrDiskFull and ENOSPC", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("left %v", got)
		}
	})

	t.Run("corruption found on re-read", func(t *testing.T) {
		dir := t.TempDir()
		testHookWriter = func(w io.Writer) io.Writer { return &flipLast{w: w} }
		defer func() { testHookWriter = nil }()
		err := WriteFile(filepath.Join(dir, "x.safetensors"), in, nil)
		if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), `"h"`) {
			t.Errorf("err = %v, want ErrVerify naming tensor h", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("left %v", got)
		}
	})

	t.Run("read-only directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: a read-only directory does not stop root; the other cases cover failures")
		}
		dir := t.TempDir()
		os.Chmod(dir, 0o555)
		defer os.Chmod(dir, 0o755)
		err := WriteFile(filepath.Join(dir, "x.safetensors"), in, nil)
		if err == nil || !strings.Contains(err.Error(), "creating temporary file") {
			t.Errorf("err = %v, want a create failure", err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("left %v", got)
		}
	})
}

// failAfter passes n bytes through, then fails every write with err.
type failAfter struct {
	w   io.Writer
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return f.w.Write(p)
	}
	k, _ := f.w.Write(p[:f.n])
	f.n = 0
	return k, f.err
}

// flipLast writes everything but inverts the last byte of the last write
// (the tail of the data area, inside tensor "h").
type flipLast struct{ w io.Writer }

func (f *flipLast) Write(p []byte) (int, error) {
	q := append([]byte(nil), p...)
	q[len(q)-1] ^= 0xff
	return f.w.Write(q)
}
