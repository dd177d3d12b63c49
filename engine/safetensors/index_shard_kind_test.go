package safetensors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestIndexShardNotAFile: a shard the index names that is there but is no
// file (a directory, a named pipe, a symbolic link loop) was reported as
// "shard file named by index does not exist ... is not a file", and a link
// into a missing blob (an HF cache snapshot never downloaded) said nothing
// of the link; a model.safetensors without an index was named precisely
// in each case. Now each says what is there: ErrShardUnreadable with the
// kind or the open's error, and ErrShardMissing (which `hsdb plan` takes
// as weights not here) naming a dangling link's target.
func TestIndexShardNotAFile(t *testing.T) {
	cases := []struct {
		name string
		make func(p string) error
		want error
		says string
	}{
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, ErrShardUnreadable, "not a regular file (a directory)"},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, ErrShardUnreadable, "not a regular file (a named pipe)"},
		{"loop", func(p string) error { return os.Symlink(filepath.Base(p), p) }, ErrShardUnreadable, "too many levels of symbolic links"},
		{"dangling", func(p string) error { return os.Symlink("../blobs/0a1b", p) }, ErrShardMissing, "is a symbolic link to ../blobs/0a1b, which does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, shards := shardedDir(t)
			p := filepath.Join(dir, shards[1])
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			_, err := OpenDir(dir)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, s := range []string{IndexName, shards[1], `"layers.2.w"`, tc.says} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
			if tc.want == ErrShardUnreadable && errors.Is(err, ErrShardMissing) {
				t.Errorf("%s is there: not ErrShardMissing (%v)", tc.name, err)
			}
		})
	}
}
