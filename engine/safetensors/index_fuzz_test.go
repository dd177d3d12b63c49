package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine/tensor"
)

// FuzzOpenIndex: model.safetensors.index.json bytes through OpenIndex in a
// directory of two valid shards (a.safetensors: x [2, 3] f32 and y [4] i64;
// b.safetensors: z [1] bf16). Seeds: the index of those shards, one with
// metadata, one that names a missing shard and one that leaves the
// directory; inputs over 4 KB are skipped. OpenIndex refuses with ErrIndex,
// ErrShardMissing or ErrShardUnreadable; a set it opens reads each named
// tensor with product(shape) × size bytes or fails with a sentinel of a
// shard that does not match its index — never a panic, and never a file
// outside the directory.
func FuzzOpenIndex(f *testing.F) {
	for _, s := range []string{
		`{"metadata": {"total_size": 40}, "weight_map": {"x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors"}}`,
		`{"weight_map": {"z": "b.safetensors"}, "metadata": {"format": "pt", "n": [1]}}`,
		`{"weight_map": {"x": "a.safetensors", "w": "c.safetensors"}}`,
		`{"weight_map": {"x": "../a.safetensors"}}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	for file, ts := range map[string][]Named{
		"a.safetensors": {{"x", tensor.FromF32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)}, {"y", tensor.FromI64([]int64{7, 8, 9, 10}, 4)}},
		"b.safetensors": {{"z", tensor.New(tensor.BF16, 1)}},
	} {
		var b bytes.Buffer
		if err := Write(&b, ts, nil); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), b.Bytes(), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	idx := filepath.Join(dir, "model.safetensors.index.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<12 {
			return
		}
		if err := os.WriteFile(idx, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenIndex(idx)
		if err != nil {
			if !errors.Is(err, ErrIndex) && !errors.Is(err, ErrShardMissing) && !errors.Is(err, ErrShardUnreadable) {
				t.Fatalf("OpenIndex error wraps no index sentinel: %v", err)
			}
			return
		}
		defer s.Close()
		for _, n := range s.Names() {
			x, err := s.Tensor(n)
			if err != nil {
				if !shardErrKind(err) {
					t.Fatalf("Tensor(%q): error of no kind: %v", n, err)
				}
				continue
			}
			if len(x.Data) != x.Numel()*x.DType.Size() {
				t.Fatalf("tensor %q: %d bytes for shape %v %s", n, len(x.Data), x.Shape, x.DType)
			}
		}
		for _, file := range s.OpenedFiles() {
			if !filepath.IsLocal(file) {
				t.Fatalf("opened %q, outside the directory", file)
			}
		}
	})
}

// shardErrKind reports whether err, from reading a tensor of an index's
// shard, wraps a sentinel of a shard that disagrees with its index or of
// a file Open refuses.
func shardErrKind(err error) bool {
	for _, s := range append([]error{ErrIndexMismatch, ErrIndexUnlisted, ErrShardUnreadable}, openSentinels...) {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
