package safetensors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// shardedDir writes a 3-shard checkpoint laid out as save_pretrained does:
// shard k holds layers.{2k}.w and layers.{2k+1}.w, each [2, 2] F32 filled
// with its layer index, and an index listing them in layer order.
func shardedDir(t *testing.T) (dir string, shards []string) {
	t.Helper()
	dir = t.TempDir()
	var wm []string
	for k := range 3 {
		name := fmt.Sprintf("model-%05d-of-00003.safetensors", k+1)
		shards = append(shards, name)
		var ts []Named
		for _, l := range []int{2 * k, 2*k + 1} {
			v := float32(l)
			ts = append(ts, Named{fmt.Sprintf("layers.%d.w", l), tensor.FromF32([]float32{v, v, v, v}, 2, 2)})
			wm = append(wm, fmt.Sprintf("%q: %q", fmt.Sprintf("layers.%d.w", l), name))
		}
		if err := WriteFile(filepath.Join(dir, name), ts, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
	}
	idx := `{"metadata": {"total_size": 96}, "weight_map": {` + strings.Join(wm, ", ") + `}}`
	if err := os.WriteFile(filepath.Join(dir, IndexName), []byte(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, shards
}

// TestIndexLazy loads one tensor of a 3-shard checkpoint and checks only
// its shard was opened and only its 16 bytes (2×2×4) were read, while the
// third shard is corrupt and never noticed until used.
func TestIndexLazy(t *testing.T) {
	dir, shards := shardedDir(t)
	// Corrupt shard 3 after the index was checked to exist.
	if err := os.WriteFile(filepath.Join(dir, shards[2]), stFile(`{"x":`, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.OpenedFiles(); len(got) != 0 {
		t.Fatalf("OpenedFiles after OpenDir = %v, want none", got)
	}
	want := []string{"layers.0.w", "layers.1.w", "layers.2.w", "layers.3.w", "layers.4.w", "layers.5.w"}
	if !slices.Equal(s.Names(), want) {
		t.Errorf("Names = %v, want %v", s.Names(), want)
	}
	if s.Files()["layers.3.w"] != shards[1] {
		t.Errorf("Files()[layers.3.w] = %q, want %q", s.Files()["layers.3.w"], shards[1])
	}
	if s.Metadata()["total_size"] != "96" {
		t.Errorf("Metadata = %v, want total_size 96", s.Metadata())
	}
	x, err := s.Tensor("layers.3.w")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.F32(), []float32{3, 3, 3, 3}) {
		t.Errorf("layers.3.w = %v", x.F32())
	}
	if got := s.OpenedFiles(); !slices.Equal(got, []string{shards[1]}) {
		t.Errorf("OpenedFiles = %v, want [%s]", got, shards[1])
	}
	if s.BytesRead() != 16 {
		t.Errorf("BytesRead = %d, want 16", s.BytesRead())
	}
	if _, err := s.RowsView("layers.2.w", 1, 2); err != nil {
		t.Fatal(err)
	}
	if s.BytesRead() != 24 || len(s.OpenedFiles()) != 1 {
		t.Errorf("after a row of layers.2.w: BytesRead %d (want 24), opened %v", s.BytesRead(), s.OpenedFiles())
	}
	_, err = s.Tensor("layers.5.w")
	if !errors.Is(err, ErrHeaderJSON) || !strings.Contains(err.Error(), shards[2]) {
		t.Errorf("corrupt shard: err = %v, want ErrHeaderJSON naming %s", err, shards[2])
	}
	if _, ok := s.Info("layers.0.w"); !ok {
		t.Errorf("Info(layers.0.w) missing")
	}
	if got := s.OpenedFiles(); !slices.Equal(got, shards[:2]) {
		t.Errorf("OpenedFiles = %v, want %v", got, shards[:2])
	}
	_, err = s.Tensor("layers.9.w")
	if !errors.Is(err, ErrNoTensor) || !strings.Contains(err.Error(), IndexName) {
		t.Errorf("missing tensor: err = %v, want ErrNoTensor naming the index", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tensor("layers.0.w"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}
}

func TestIndexNotJSON(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, IndexName)
	if err := os.WriteFile(p, []byte(`{"weight_map": {"a": "x.safetensors",}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenIndex(p)
	if !errors.Is(err, ErrIndex) || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v, want ErrIndex naming %s", err, p)
	}
	if err := os.WriteFile(p, []byte(`{"metadata": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir); !errors.Is(err, ErrIndex) || !strings.Contains(err.Error(), "weight_map") {
		t.Errorf("no weight_map: err = %v, want ErrIndex", err)
	}
	if err := os.WriteFile(p, []byte(`{"weight_map": {"a": "../x.safetensors"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir); !errors.Is(err, ErrIndex) || !strings.Contains(err.Error(), "../x.safetensors") {
		t.Errorf("escaping path: err = %v, want ErrIndex", err)
	}
}

func TestIndexShardMissing(t *testing.T) {
	dir, shards := shardedDir(t)
	os.Remove(filepath.Join(dir, shards[1]))
	_, err := OpenDir(dir)
	if !errors.Is(err, ErrShardMissing) {
		t.Fatalf("err = %v, want ErrShardMissing", err)
	}
	for _, s := range []string{IndexName, shards[1], `"layers.2.w"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
}

// TestIndexMismatch: the index puts layers.9.w in shard 1, which lacks it;
// found when shard 1 is opened, whichever of its tensors is asked for.
func TestIndexMismatch(t *testing.T) {
	s, p, shards := openEditedIndex(t, func(raw string, shards []string) string {
		return strings.Replace(raw, `"weight_map": {`, `"weight_map": {"layers.9.w": "`+shards[0]+`", `, 1)
	})
	if _, err := s.Tensor("layers.2.w"); err != nil {
		t.Fatalf("shard 2 is fine: %v", err)
	}
	_, err := s.Tensor("layers.0.w")
	if !errors.Is(err, ErrIndexMismatch) {
		t.Fatalf("err = %v, want ErrIndexMismatch", err)
	}
	for _, x := range []string{p, shards[0], `"layers.9.w"`} {
		if !strings.Contains(err.Error(), x) {
			t.Errorf("message %q lacks %q", err, x)
		}
	}
	if slices.Contains(s.OpenedFiles(), shards[0]) {
		t.Errorf("mismatched shard left open")
	}
}

func TestDirNoIndex(t *testing.T) {
	dir := t.TempDir()
	one := func(v float32) *tensor.Tensor { return tensor.FromF32([]float32{v}, 1) }
	if err := WriteFile(filepath.Join(dir, "b.safetensors"), []Named{{"y", one(2)}, {"z", one(3)}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "a.safetensors"), []Named{{"x", one(1)}}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !slices.Equal(s.Names(), []string{"x", "y", "z"}) {
		t.Errorf("Names = %v, want [x y z] (file, then offset order)", s.Names())
	}
	if !slices.Equal(s.OpenedFiles(), []string{"a.safetensors", "b.safetensors"}) {
		t.Errorf("OpenedFiles = %v, want both", s.OpenedFiles())
	}
	z, err := s.Tensor("z")
	if err != nil || z.F32()[0] != 3 {
		t.Errorf("z = %v, %v", z, err)
	}

	// A duplicate across files is an error naming the tensor and both files.
	if err := WriteFile(filepath.Join(dir, "c.safetensors"), []Named{{"y", one(9)}}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = OpenDir(dir)
	if !errors.Is(err, ErrDuplicateTensor) {
		t.Fatalf("err = %v, want ErrDuplicateTensor", err)
	}
	for _, x := range []string{`"y"`, "b.safetensors", "c.safetensors"} {
		if !strings.Contains(err.Error(), x) {
			t.Errorf("message %q lacks %q", err, x)
		}
	}

	// model.safetensors, when present, is the checkpoint (as in transformers).
	if err := WriteFile(filepath.Join(dir, SingleName), []Named{{"m", one(5)}}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !slices.Equal(s2.Names(), []string{"m"}) || s2.Metadata()["format"] != "pt" {
		t.Errorf("Names = %v, Metadata = %v; want [m], format pt", s2.Names(), s2.Metadata())
	}
}

func TestDirEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDir(dir)
	if !errors.Is(err, ErrEmptyDir) || !strings.Contains(err.Error(), "no *.safetensors in "+dir) {
		t.Errorf("err = %v, want ErrEmptyDir naming %s", err, dir)
	}
}

// TestSetConcurrent reads every tensor of a sharded set from 8 goroutines
// at once: each must get its value and each shard be opened once (run with
// -race to check the locking).
func TestSetConcurrent(t *testing.T) {
	dir, shards := shardedDir(t)
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errs := make(chan error, 8*6)
	for g := range 8 {
		go func() {
			for i := range 6 {
				l := (i + g) % 6
				x, err := s.Tensor(fmt.Sprintf("layers.%d.w", l))
				if err == nil && x.F32()[0] != float32(l) {
					err = fmt.Errorf("layers.%d.w = %v", l, x.F32())
				}
				errs <- err
			}
		}()
	}
	for range 8 * 6 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if !slices.Equal(s.OpenedFiles(), shards) {
		t.Errorf("OpenedFiles = %v, want %v", s.OpenedFiles(), shards)
	}
	if s.BytesRead() != 8*6*16 {
		t.Errorf("BytesRead = %d, want %d", s.BytesRead(), 8*6*16)
	}
}

// TestShardErrRecordedOnce: a shard that fails to open is reported by
// ShardErr (the first failure, naming the shard and the tensor looked up)
// and is not opened again for each of its tensors: a lookup after the file
// was repaired on disk returns the recorded error. Before, a broken shard
// of N tensors was mapped, parsed and checked against the index on every
// lookup (a checkpoint with a misplaced tensor took seconds per load to say
// so) and nothing remembered that it had failed.
func TestShardErrRecordedOnce(t *testing.T) {
	dir, shards := shardedDir(t)
	p := filepath.Join(dir, shards[1])
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, good[:len(good)-4], 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ShardErr(); err != nil {
		t.Fatalf("ShardErr before any lookup = %v", err)
	}
	if _, ok := s.Info("layers.0.w"); !ok { // shard 1 is sound
		t.Fatal("layers.0.w not found")
	}
	if err := s.ShardErr(); err != nil {
		t.Fatalf("ShardErr after a sound shard = %v", err)
	}
	_, err1 := s.Lookup("layers.2.w")
	if !errors.Is(err1, ErrOutOfRange) || !strings.Contains(err1.Error(), shards[1]) || !strings.Contains(err1.Error(), `"layers.2.w"`) {
		t.Fatalf("Lookup in the truncated shard = %v; want ErrOutOfRange naming %s and the tensor", err1, shards[1])
	}
	if err := s.ShardErr(); err == nil || err.Error() != err1.Error() {
		t.Fatalf("ShardErr = %v, want %v", err, err1)
	}
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err2 := s.Lookup("layers.3.w"); err2 == nil || err2.Error() != err1.Error() {
		t.Fatalf("second lookup in the failed shard = %v; want the recorded %v without reopening it", err2, err1)
	}
}

// TestIndexUnlisted: the index leaves out layers.1.w, which shard 1 holds.
// transformers and vLLM load every tensor of a shard the index names, so
// the tensor is part of their model; hsdb looked it up through the index
// alone and reported it absent, letting a caller fall back to a default
// (a zero routing bias). Opening shard 1 now fails naming the index, the
// shard and the tensor; the other shards still open.
func TestIndexUnlisted(t *testing.T) {
	s, p, shards := openEditedIndex(t, func(raw string, shards []string) string {
		return strings.Replace(raw, `"layers.1.w": "`+shards[0]+`", `, "", 1)
	})
	if _, err := s.Tensor("layers.2.w"); err != nil {
		t.Fatalf("shard 2 is fine: %v", err)
	}
	_, err := s.Tensor("layers.0.w")
	if !errors.Is(err, ErrIndexUnlisted) {
		t.Fatalf("err = %v, want ErrIndexUnlisted", err)
	}
	for _, x := range []string{p, shards[0], `"layers.1.w"`} {
		if !strings.Contains(err.Error(), x) {
			t.Errorf("message %q lacks %q", err, x)
		}
	}
	if !errors.Is(s.ShardErr(), ErrIndexUnlisted) {
		t.Errorf("ShardErr = %v, want the unlisted tensor's error", s.ShardErr())
	}
	if slices.Contains(s.OpenedFiles(), shards[0]) {
		t.Errorf("shard with an unlisted tensor left open")
	}
}

// TestIndexTensorsBounded: an index of 240 MB naming 9 million tensors
// (within MaxIndexBytes) took 2.4 GB and two minutes to open (hsdb plan
// stalled on it). weight_map is bounded at MaxIndexTensors names, refused
// naming the index and the bound.
func TestIndexTensorsBounded(t *testing.T) {
	write := func(n int) string {
		dir := t.TempDir()
		var b strings.Builder
		b.WriteString(`{"metadata": {}, "weight_map": {`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"t%d": "a.safetensors"`, i)
		}
		b.WriteString("}}")
		if err := os.WriteFile(filepath.Join(dir, IndexName), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(filepath.Join(dir, "a.safetensors"), []Named{{"t0", tensor.FromF32([]float32{1}, 1)}}, nil); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, IndexName)
	}
	p := write(MaxIndexTensors + 1)
	_, err := OpenIndex(p)
	if !errors.Is(err, ErrIndex) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "weight_map names more than 1048576 tensors") {
		t.Fatalf("%d tensors: %v, want ErrIndex naming the index and the bound", MaxIndexTensors+1, err)
	}
	s, err := OpenIndex(write(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Names(); !slices.Equal(got, []string{"t0", "t1", "t2"}) {
		t.Fatalf("names %v, want t0 t1 t2 in weight_map order", got)
	}
}

// openEditedIndex writes shardedDir's index as edit rewrites it (given the
// index's text and the shard file names), opens it and returns the set
// (closed at the test's end), the index's path and the shard names. An
// edit that changes nothing fails the test.
func openEditedIndex(t *testing.T, edit func(raw string, shards []string) string) (*Set, string, []string) {
	t.Helper()
	dir, shards := shardedDir(t)
	p := filepath.Join(dir, IndexName)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := edit(string(raw), shards)
	if edited == string(raw) {
		t.Fatal("edit did not apply")
	}
	if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p, shards
}
