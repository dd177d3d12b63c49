package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"syscall"
	"unicode/utf8"

	"hsdb/engine/tensor"
)

// Named is one tensor to write under a header key (an HF module path such
// as "model.layers.3.mlp.down_proj.weight", or "hidden_states.30").
type Named struct {
	Name string         // header key; unique, non-empty, not "__metadata__"
	T    *tensor.Tensor // any shape and dtype; Data is written as is
}

// Write writes tensors as one safetensors file to w: the 8-byte header
// length, the header JSON (compact, "__metadata__" first when metadata is
// non-empty, then the tensors in the order given, padded with spaces to a
// multiple of 8 bytes as the Python library's serializer does), then each
// tensor's Data, contiguous, in the order given. With 8-byte padding every
// tensor of 8-byte-sized or smaller elements starts aligned when the first
// one does, so Open returns them zero-copy when the writer orders them by
// descending element size (the Python library sorts that way; Write keeps
// the caller's order). Errors: ErrDuplicateName; ErrBadTensor (nil tensor,
// empty or "__metadata__" name, invalid dtype, negative dimension, Data not
// product(Shape) × DType.Size() bytes, a name not valid UTF-8);
// ErrMetadata (a key or value not valid UTF-8); ErrHeaderTooLarge; or the
// writer's error, wrapped with the tensor being written.
func Write(w io.Writer, tensors []Named, metadata map[string]string) error {
	hdr, err := buildHeader(tensors, metadata)
	if err != nil {
		return err
	}
	return writeBody(w, hdr, tensors)
}

// writeBody writes the length prefix, header and data of checked tensors.
func writeBody(w io.Writer, hdr []byte, tensors []Named) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	bw.Write(n[:])
	if _, err := bw.Write(hdr); err != nil {
		return fmt.Errorf("safetensors: writing header: %w", err)
	}
	for _, nt := range tensors {
		if _, err := bw.Write(nt.T.Data); err != nil {
			return fmt.Errorf("safetensors: writing tensor %q: %w", nt.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: writing: %w", err)
	}
	return nil
}

// buildHeader checks tensors and metadata and returns the padded header.
func buildHeader(tensors []Named, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("safetensors: %w: metadata key %q or its value is not valid UTF-8", ErrMetadata, k)
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, metadata[k])
		}
		b.WriteByte('}')
		first = false
	}
	seen := make(map[string]bool, len(tensors))
	var off int64
	for i, nt := range tensors {
		if err := checkWritable(i, nt); err != nil {
			return nil, err
		}
		if seen[nt.Name] {
			return nil, fmt.Errorf("safetensors: tensor %q: %w: given twice (second at position %d)", nt.Name, ErrDuplicateName, i)
		}
		seen[nt.Name] = true
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeJSONString(&b, nt.Name)
		b.WriteString(`:{"dtype":"`)
		b.WriteString(nt.T.DType.SafetensorsName())
		b.WriteString(`","shape":[`)
		for j, d := range nt.T.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		end := off + int64(len(nt.T.Data))
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors: %w: header would be %d bytes, limit is %d", ErrHeaderTooLarge, b.Len(), MaxHeaderSize)
	}
	return b.Bytes(), nil
}

// checkWritable checks one tensor given to Write at position i.
func checkWritable(i int, nt Named) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("safetensors: tensor %q (position %d): %w: %s", nt.Name, i, ErrBadTensor, fmt.Sprintf(format, a...))
	}
	switch {
	case nt.Name == "":
		return bad("empty name")
	case nt.Name == metadataKey:
		return bad("the name %q is reserved for metadata", metadataKey)
	case !utf8.ValidString(nt.Name):
		return bad("name is not valid UTF-8")
	case nt.T == nil:
		return bad("nil tensor")
	case nt.T.DType.SafetensorsName() == "":
		return bad("dtype %s has no safetensors name", nt.T.DType)
	}
	numel := int64(1)
	for _, d := range nt.T.Shape {
		if d < 0 {
			return bad("negative dimension in shape %s", tensor.ShapeString(nt.T.Shape))
		}
		if d != 0 && numel > math.MaxInt64/int64(d)/8 {
			return bad("shape %s overflows", tensor.ShapeString(nt.T.Shape))
		}
		numel *= int64(d)
	}
	if want := numel * int64(nt.T.DType.Size()); int64(len(nt.T.Data)) != want {
		return bad("shape %s of %s needs %d bytes of data, found %d", tensor.ShapeString(nt.T.Shape), nt.T.DType, want, len(nt.T.Data))
	}
	return nil
}

// writeJSONString appends s as a JSON string without HTML escaping (the
// Python library's serde_json writes "<" as is; encoding/json would write
// \u003c, which is equally valid but differs byte for byte).
func writeJSONString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a valid UTF-8 string cannot fail
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// testHookWriter, when set by a test, wraps the temporary file's writer in
// WriteFile (to inject ENOSPC or corruption); nil in normal use.
var testHookWriter func(io.Writer) io.Writer

// WriteFile writes tensors and metadata to path atomically: it checks the
// input (as Write does) before creating anything, writes a temporary file
// ".NAME.tmp-*" in the same directory, fsyncs it, re-opens it with Open
// (full validation) and compares every tensor's name, dtype, shape and bytes
// and the metadata with the input, renames it over path, and fsyncs the
// directory so the rename survives a crash. The file gets mode 0644. On any
// failure the temporary file is removed, path is left as it was, and the
// error says which step failed; it wraps ErrDiskFull when the disk is full
// (ENOSPC), ErrVerify when the re-read differs, or Write's errors.
func WriteFile(path string, tensors []Named, metadata map[string]string) (err error) {
	return WriteFileWith(path, tensors, metadata, func(tmp string) error { return os.Rename(tmp, path) })
}

// WriteFileWith is WriteFile with the last step given: publish puts the
// complete, verified temporary file tmp in place at path (WriteFile's is
// os.Rename, which replaces what is there). A caller that must not replace
// a file made at path while it wrote (the debugger's save without --force)
// publishes without replacing. publish's error is returned wrapped, the
// temporary file removed.
func WriteFileWith(path string, tensors []Named, metadata map[string]string, publish func(tmp string) error) (err error) {
	hdr, err := buildHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: write %s: creating temporary file: %w", path, diskFull(err))
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	var w io.Writer = tmp
	if testHookWriter != nil {
		w = testHookWriter(tmp)
	}
	if err := writeBody(w, hdr, tensors); err != nil {
		return fmt.Errorf("safetensors: write %s (temporary %s): %w", path, tmpName, diskFull(err))
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("safetensors: write %s: fsync of %s: %w", path, tmpName, diskFull(err))
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("safetensors: write %s: chmod of %s: %w", path, tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("safetensors: write %s: closing %s: %w", path, tmpName, diskFull(err))
	}
	if err := verifyWritten(tmpName, tensors, metadata); err != nil {
		return fmt.Errorf("safetensors: write %s: re-reading the temporary file: %w", path, err)
	}
	if err := publish(tmpName); err != nil {
		return fmt.Errorf("safetensors: write %s: renaming the temporary file into place: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		// The file is complete and in place; only its durability is unsure.
		return fmt.Errorf("safetensors: write %s: the file is written but fsync of directory %s failed: %w", path, dir, err)
	}
	return nil
}

// diskFull marks ENOSPC errors with ErrDiskFull so that the message and
// errors.Is both say the disk is full.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}

// verifyWritten opens the file at path and checks it holds exactly tensors
// (in order) and metadata.
func verifyWritten(path string, tensors []Named, metadata map[string]string) error {
	f, err := Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Len() != len(tensors) {
		return fmt.Errorf("%s: %w: %d tensors, wrote %d", path, ErrVerify, f.Len(), len(tensors))
	}
	for i, ti := range f.infos {
		want := tensors[i]
		if ti.Name != want.Name || ti.DType != want.T.DType || !slices.Equal(ti.Shape, want.T.Shape) {
			return fmt.Errorf("%s: %w: tensor %d reads as %q %s %s, wrote %q %s %s", path, ErrVerify, i,
				ti.Name, ti.DType, tensor.ShapeString(ti.Shape), want.Name, want.T.DType, tensor.ShapeString(want.T.Shape))
		}
		if !bytes.Equal(f.data[ti.Offset:ti.Offset+ti.Bytes()], want.T.Data) {
			return fmt.Errorf("%s: tensor %q: %w: its bytes differ from those written", path, ti.Name, ErrVerify)
		}
	}
	got := f.Metadata()
	if len(got) != len(metadata) {
		return fmt.Errorf("%s: %w: %d metadata keys, wrote %d", path, ErrVerify, len(got), len(metadata))
	}
	for k, v := range metadata {
		if g, ok := got[k]; !ok || g != v {
			return fmt.Errorf("%s: %w: metadata %q reads as %q, wrote %q", path, ErrVerify, k, g, v)
		}
	}
	return nil
}

// syncDir fsyncs a directory so a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
