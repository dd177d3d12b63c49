package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"unicode/utf8"

	"hsdb/engine/jsonerr"
	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
)

// IndexName is the file name transformers' save_pretrained gives the index
// of a sharded checkpoint (SAFE_WEIGHTS_INDEX_NAME in transformers/utils).
const IndexName = "model.safetensors.index.json"

// MaxIndexBytes bounds model.safetensors.index.json (DeepSeek-V3's, for
// 91k tensors, is about 9 MB).
const MaxIndexBytes = 256 << 20

// MaxIndexTensors bounds the tensors an index's weight_map names
// (DeepSeek-V3 has 91k, Kimi-K2 about 200k; 61 layers of 1024 int4
// experts would have 560k): each costs a map entry and a few
// microseconds, and an index of 9 million names within MaxIndexBytes took
// 2.4 GB and two minutes to open.
const MaxIndexTensors = 1 << 20

// SingleName is the file name of an unsharded checkpoint (SAFE_WEIGHTS_NAME).
const SingleName = "model.safetensors"

// Set is a checkpoint made of one or more safetensors files: the shards of
// a model.safetensors.index.json, a single model.safetensors, or every
// *.safetensors of a directory. With an index, shards are opened (mapped
// and validated) only on the first Tensor, RowsView, Info or Lookup of a
// tensor they hold, so a partial load never maps the others. A Set is safe
// for concurrent use; Close must not race with other calls.
type Set struct {
	where     string            // the index path, or the directory
	dir       string            // where shard names are resolved
	indexPath string            // "" without an index
	names     []string          // index order, or file then offset order
	fileOf    map[string]string // tensor -> shard file name (relative to dir)
	meta      map[string]string

	mu          sync.Mutex
	opened      map[string]*File // shard file name -> opened file
	closed      bool
	closedBytes int64            // BytesRead of shards already closed
	shardErr    error            // the first shard that failed to open or to match the index
	failed      map[string]error // shard file name -> why it failed (not reopened)
}

// OpenDir opens the checkpoint in dir. It uses, in this order: an index
// (model.safetensors.index.json, or else the single *.safetensors.index.json
// present), opened lazily as OpenIndex does; model.safetensors alone (as
// transformers' from_pretrained does; other *.safetensors are then
// ignored); or every *.safetensors in the directory, all opened now. Errors:
// ErrEmptyDir when there is none; ErrDuplicateTensor when, without an
// index, two files hold the same tensor; ErrIndex when several indexes
// compete; any error of Open or OpenIndex.
func OpenDir(dir string) (*Set, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("safetensors: %s is not a directory", dir)
	}
	if ok, _ := regfile.Present(filepath.Join(dir, IndexName)); ok { // a broken link too: OpenIndex names it
		return OpenIndex(filepath.Join(dir, IndexName))
	}
	idx, _ := filepath.Glob(filepath.Join(globEscape(dir), "*.safetensors.index.json"))
	switch {
	case len(idx) == 1:
		return OpenIndex(idx[0])
	case len(idx) > 1:
		return nil, fmt.Errorf("%s: %w: several indexes and no %s: %v", dir, ErrIndex, IndexName, idx)
	}
	var files []string
	if ok, _ := regfile.Present(filepath.Join(dir, SingleName)); ok {
		files = []string{SingleName}
	} else {
		all, _ := filepath.Glob(filepath.Join(globEscape(dir), "*.safetensors"))
		for _, p := range all {
			files = append(files, filepath.Base(p))
		}
		sort.Strings(files)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("safetensors: %w: no *.safetensors in %s (and no %s)", ErrEmptyDir, dir, IndexName)
	}
	s := &Set{where: dir, dir: dir, fileOf: map[string]string{}, opened: map[string]*File{}}
	for _, name := range files {
		f, err := Open(filepath.Join(dir, name))
		if err != nil {
			s.Close()
			return nil, err
		}
		s.opened[name] = f
		for _, t := range f.Names() {
			if prev, dup := s.fileOf[t]; dup {
				s.Close()
				return nil, fmt.Errorf("%s: tensor %q: %w: in both %s and %s", dir, t, ErrDuplicateTensor, prev, name)
			}
			s.fileOf[t] = name
			s.names = append(s.names, t)
		}
	}
	if len(files) == 1 {
		s.meta = s.opened[files[0]].Metadata()
	}
	return s, nil
}

// globEscape escapes the glob metacharacters of a literal directory path.
func globEscape(p string) string {
	var b bytes.Buffer
	for _, r := range p {
		if r == '*' || r == '?' || r == '[' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// OpenIndex reads a sharded checkpoint's index, the JSON object
// {"metadata": {...}, "weight_map": {tensor: shard file name}} that
// transformers writes, and checks that every shard it names exists. Shards
// are not opened here. Errors: ErrIndex (not valid JSON, no weight_map
// object, a value that is not a string naming a file inside the index's
// directory, the same tensor twice, an empty weight_map); ErrShardMissing
// (no such file, or a symbolic link to a missing file) or
// ErrShardUnreadable (a directory, named pipe or device, a symbolic link
// loop, a file it may not open) naming the index, the file, a tensor
// mapped to it and what is there. When a shard is
// first opened, every tensor the index assigns to it must be in it, and
// every tensor in it must be in the index (transformers and vLLM load a
// shard's tensors whether the index lists them or not), else
// ErrIndexMismatch or ErrIndexUnlisted naming the index, the file and the
// tensor.
func OpenIndex(indexPath string) (*Set, error) {
	raw, err := regfile.ReadFile(indexPath, MaxIndexBytes)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w: %s", indexPath, ErrIndex, fmt.Sprintf(format, a...))
	}
	if !utf8.Valid(raw) {
		return nil, bad("not valid UTF-8")
	}
	// One pass of the scanner over the object; json.Unmarshal into a map
	// copied every value (the weight_map whole) only to find two keys.
	top := map[string][]byte{} // a key given twice keeps its last value, as in encoding/json
	if members(raw, func(k string, v []byte) error { top[k] = v; return nil }) != nil {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, bad("%v", jsonerr.Explain(err))
		}
		return nil, bad("not a JSON object") // not reached: Unmarshal refuses what members does
	}
	wm, ok := top["weight_map"]
	if !ok || jsonerr.Kind(wm) != "object" {
		return nil, bad("expected a \"weight_map\" object of tensor name to file name")
	}
	s := &Set{where: indexPath, dir: filepath.Dir(indexPath), indexPath: indexPath,
		fileOf: map[string]string{}, opened: map[string]*File{}}

	// Decode weight_map by members to keep its order and see duplicates
	// (json.Decoder's tokens took two minutes and 2.4 GB for an index of
	// 240 MB).
	shardNames := map[string]string{} // raw JSON value -> file name: one string per shard, not per tensor
	err = members(wm, func(name string, v []byte) error {
		file, ok := shardNames[string(v)]
		if !ok {
			if file, ok = decodeString(v); jsonerr.Kind(v) != "string" || !ok {
				return bad("weight_map[%q] is a JSON %s, expected a file name", name, jsonerr.Kind(v))
			}
			shardNames[string(v)] = file
		}
		if !filepath.IsLocal(file) {
			return bad("weight_map[%q] = %q is not a file inside %s", name, file, s.dir)
		}
		if _, dup := s.fileOf[name]; dup {
			return bad("tensor %q appears twice in weight_map", name)
		}
		if len(s.names) == MaxIndexTensors {
			return bad("weight_map names more than %d tensors", MaxIndexTensors)
		}
		s.fileOf[name] = file
		s.names = append(s.names, name)
		return nil
	})
	if err == errNotObject { // not reached: members took the whole index
		return nil, bad("weight_map is not a valid JSON object")
	}
	if err != nil {
		return nil, err
	}
	if len(s.names) == 0 {
		return nil, bad("weight_map is empty")
	}
	checked := map[string]bool{}
	for _, name := range s.names {
		file := s.fileOf[name]
		if checked[file] {
			continue
		}
		checked[file] = true
		// regfile.Open names what is there instead of a file (a directory, a
		// named pipe, a device, a symbolic link loop or one to a missing
		// blob); all of them were reported as a shard that does not exist.
		f, err := regfile.Open(filepath.Join(s.dir, file))
		switch {
		case err == nil:
			f.Close()
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: %w: %s (holding tensor %q) is not a file in %s", indexPath, ErrShardMissing, file, name, s.dir)
		case errors.Is(err, regfile.ErrDanglingLink): // an HF cache snapshot whose blob was never downloaded: not here
			return nil, fmt.Errorf("%s: %w: %s (holding tensor %q): %w", indexPath, ErrShardMissing, file, name, err)
		default:
			return nil, fmt.Errorf("%s: %w: %s (holding tensor %q): %w", indexPath, ErrShardUnreadable, file, name, err)
		}
	}
	if m, ok := top["metadata"]; ok && jsonerr.Kind(m) == "object" {
		var mm map[string]json.RawMessage
		if json.Unmarshal(m, &mm) == nil {
			s.meta = make(map[string]string, len(mm))
			for k, v := range mm {
				var str string
				if json.Unmarshal(v, &str) == nil {
					s.meta[k] = str
				} else {
					s.meta[k] = rawText(v)
				}
			}
		}
	}
	return s, nil
}

// shard returns the opened file holding tensor name, opening it on first
// use. With an index it checks, once per shard, that the shard has every
// tensor the index assigns to it.
func (s *Set) shard(name string) (*File, error) {
	file, ok := s.fileOf[name]
	if !ok {
		return nil, noTensorError(s.where, name, s.names)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%s: tensor %q: %w", s.where, name, ErrClosed)
	}
	if f := s.opened[file]; f != nil {
		return f, nil
	}
	if err := s.failed[file]; err != nil { // parsed once: a broken shard is not mapped again per tensor
		return nil, err
	}
	f, err := Open(filepath.Join(s.dir, file))
	if err != nil {
		return nil, s.failShard(file, fmt.Errorf("%s: opening shard %s (which holds tensor %q): %w", s.where, file, name, err))
	}
	for _, t := range s.names {
		if s.fileOf[t] != file {
			continue
		}
		if _, ok := f.index[t]; !ok {
			f.Close()
			return nil, s.failShard(file, fmt.Errorf("%s: tensor %q: %w: the index places it in %s, which has %d tensors but not this one",
				s.indexPath, t, ErrIndexMismatch, file, f.Len()))
		}
	}
	for _, t := range f.Names() {
		if _, listed := s.fileOf[t]; !listed {
			// transformers and vLLM load every tensor of a shard the
			// index names, listed or not; hsdb finds tensors through the
			// index alone and would take this one for absent (an
			// optional tensor such as e_score_correction_bias then
			// defaults to zeros: another model, silently).
			f.Close()
			return nil, s.failShard(file, fmt.Errorf("%s: tensor %q: %w: shard %s holds it, weight_map does not name it (transformers and vLLM load it from the shard; hsdb would take it for absent): add it to weight_map if it belongs to the model, or remove it from the shard if it is left over (a shard reused from another checkpoint)",
				s.indexPath, t, ErrIndexUnlisted, file))
		}
	}
	s.opened[file] = f
	return f, nil
}

// failShard records err as why shard file failed (later lookups in it
// return err without opening it again) and as the set's ShardErr when it
// is the first; it returns err. s.mu is held.
func (s *Set) failShard(file string, err error) error {
	if s.failed == nil {
		s.failed = map[string]error{}
	}
	s.failed[file] = err
	if s.shardErr == nil {
		s.shardErr = err
	}
	return err
}

// ShardErr returns the first error met opening a shard (a corrupt or
// truncated file, a shard without a tensor the index places in it), or nil.
// Info reports such a tensor as absent (false); a caller that takes
// absence to mean "use a default" (a tied LM head, a zero routing bias)
// checks ShardErr after reading, so that a broken shard is never mistaken
// for a tensor the checkpoint does not have.
func (s *Set) ShardErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shardErr
}

// Names returns every tensor name of the checkpoint without opening any
// shard: in weight_map order with an index, else by file name and then by
// offset within each file.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Info returns tensor name's header description, opening its shard if
// needed. It reports false when the tensor is unknown or its shard fails to
// open or to match the index; Lookup says which.
func (s *Set) Info(name string) (TensorInfo, bool) {
	if _, ok := s.fileOf[name]; !ok { // absent: no "did you mean" search
		return TensorInfo{}, false
	}
	ti, err := s.Lookup(name)
	return ti, err == nil
}

// Lookup is Info with the error: ErrNoTensor (naming the index or
// directory, the tensor and the closest names) or the shard's open error.
func (s *Set) Lookup(name string) (TensorInfo, error) {
	f, err := s.shard(name)
	if err != nil {
		return TensorInfo{}, err
	}
	return f.Lookup(name)
}

// Tensor returns tensor name from its shard, as File.Tensor does (zero-copy
// when aligned), opening the shard on first use.
func (s *Set) Tensor(name string) (*tensor.Tensor, error) {
	f, err := s.shard(name)
	if err != nil {
		return nil, err
	}
	return f.Tensor(name)
}

// RowsView returns rows [a, b) of the first dimension of tensor name, as
// File.RowsView does, opening its shard on first use.
func (s *Set) RowsView(name string, a, b int) (*tensor.Tensor, error) {
	f, err := s.shard(name)
	if err != nil {
		return nil, err
	}
	return f.RowsView(name, a, b)
}

// BytesRead returns the sum of BytesRead over the opened shards.
func (s *Set) BytesRead() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.closedBytes
	for _, f := range s.opened {
		n += f.BytesRead()
	}
	return n
}

// Files returns which shard file (a name relative to the checkpoint's
// directory) holds each tensor, without opening any.
func (s *Set) Files() map[string]string {
	out := make(map[string]string, len(s.fileOf))
	for k, v := range s.fileOf {
		out[k] = v
	}
	return out
}

// OpenedFiles returns the shard file names opened so far, sorted.
func (s *Set) OpenedFiles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.opened))
	for k := range s.opened {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Metadata returns the index's "metadata" object (non-string values such as
// total_size as their JSON text, "total_size" → "16384"), or, for a single
// file without index, that file's __metadata__; nil otherwise.
func (s *Set) Metadata() map[string]string {
	if s.meta == nil {
		return nil
	}
	out := make(map[string]string, len(s.meta))
	for k, v := range s.meta {
		out[k] = v
	}
	return out
}

// Dir returns the directory shard names are resolved against.
func (s *Set) Dir() string { return s.dir }

// Close unmaps every opened shard and returns their errors joined; later
// reads fail with ErrClosed. OpenedFiles then lists none; BytesRead keeps
// its total.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for k, f := range s.opened {
		s.closedBytes += f.BytesRead()
		errs = append(errs, f.Close())
		delete(s.opened, k)
	}
	return errors.Join(errs...)
}
