package debug

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"hsdb/engine/regfile"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
)

// Save writes tensor name at the stop to path: the rows sl selects, f32,
// as [rows, cols]. The source is what hist reads (located.source): the
// gathered full tensor of a sharded one, the sum of a partial one, rank 0's
// copy of a replicated one, or rank sl.Rank's own tensor. path ends in
// .safetensors (one tensor keyed "SITE:TENSOR", with the site, step,
// source, rows and the pass's edits as metadata) or .npy (NumPy's format
// 1.0, '<f4', C order). The file is written under a temporary name,
// re-read and compared, then renamed into place; a file already at path is
// replaced only with force, and only when Save wrote it (savedByHsdb; as
// a dump's DIR only with --force and only when hsdb wrote it). Errors: as
// Print, another extension, an existing file without force, the file
// system's.
func (s *Session) Save(name, path string, sl client.Slice, force bool) (*client.SaveReport, error) {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	if format != "safetensors" && format != "npy" {
		return nil, fmt.Errorf("save %s: want a .safetensors or .npy file name", path)
	}
	if err := savePathOK(path, force); err != nil {
		return nil, err
	}
	var rep *client.SaveReport
	var data *tensor.Tensor
	err := s.at(func(st *stopCtx) error {
		l, err := s.locate(st, name, sl)
		if err != nil {
			return err
		}
		d, _, src, err := l.source(sl)
		if err != nil {
			return err
		}
		data = tensor.FromF32(d.F32(), d.Rows(), d.Cols())
		rep = &client.SaveReport{Site: st.ev.Site.Path, Tensor: name, Step: st.ev.Step, Path: path, Format: format,
			Shape: []int{d.Rows(), d.Cols()}, Source: src, Rows: l.rows}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if format == "npy" {
		return rep, writeNPY(path, data, force)
	}
	rep.Key = rep.Site + ":" + name
	md := map[string]string{"site": rep.Site, "tensor": name, "step": fmt.Sprint(rep.Step), "source": rep.Source,
		"rows": fmt.Sprintf("%d:%d", rep.Rows.Lo, rep.Rows.Hi)}
	if e := s.PassEdits(); len(e) > 0 {
		md["edits"] = strings.Join(e, "\n")
	}
	publish := func(tmp string) error { return publishSaved(tmp, path, force) }
	if err := safetensors.WriteFileWith(path, []safetensors.Named{{Name: rep.Key, T: data}}, md, publish); err != nil {
		if r, ok := asRefusal(err); ok {
			return nil, r
		}
		return nil, fmt.Errorf("save: %w", err)
	}
	return rep, nil
}

// npyBytes encodes t [rows, cols] f32 in NumPy's .npy format version 1.0
// (numpy.lib.format: magic "\x93NUMPY", version 1 0, a little-endian
// uint16 header length, the header dict padded with spaces and ended by a
// newline so the data starts at a multiple of 64 bytes, then the data).
// Written here rather than with a library: the Go .npy packages pull in
// gonum and move the pickle reader's version.
func npyBytes(t *tensor.Tensor) []byte {
	hdr := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", t.Rows(), t.Cols())
	pad := (64 - (10+len(hdr)+1)%64) % 64
	hdr += strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	for _, v := range t.F32() {
		binary.Write(&b, binary.LittleEndian, math.Float32bits(v))
	}
	return b.Bytes()
}

// savePathOK checks, before anything is computed, that path can be
// written as a file: its directory exists and is a directory, and path is
// not a directory itself. Errors name which (the temporary file's name
// would otherwise be the one reported).
func savePathOK(path string, force bool) error {
	dir := filepath.Dir(path)
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("save %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("save %s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("save %s: %s is not a directory", path, dir)
	}
	switch st, err := os.Lstat(path); {
	case err == nil && st.IsDir():
		return fmt.Errorf("save %s: a directory has that name", path)
	case err == nil && !force:
		return fmt.Errorf("save %s: the file exists; give --force to replace it", path)
	case err == nil && !st.Mode().IsRegular():
		return fmt.Errorf("save %s: %s, not a regular file; --force replaces only a file save wrote", path, regfile.Kind(st.Mode()))
	case err == nil:
		return savedByHsdb(path)
	}
	return nil
}

// savedByHsdb returns nil when the file at path is one Save wrote, the
// only kind --force replaces (the project's rule: --force only ever
// replaces what hsdb itself wrote): a .safetensors file holding one tensor
// keyed SITE:TENSOR with Save's metadata (site, tensor, step, source,
// rows). A .npy file is never replaced: NumPy's header admits no other
// keys, so hsdb's .npy cannot be told from anyone's. Errors say which.
func savedByHsdb(path string) error {
	if filepath.Ext(path) == ".npy" {
		return fmt.Errorf("save %s: the file exists, and a .npy file holds no mark of who wrote it, so hsdb never replaces one: remove it or choose another name", path)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("save %s: the file exists and is not a tensor hsdb's save wrote (%v); --force replaces only those", path, err)
	}
	defer f.Close()
	md := f.Metadata()
	names := f.Names()
	for _, k := range []string{"site", "tensor", "step", "source", "rows"} {
		if _, ok := md[k]; !ok || len(names) != 1 || names[0] != md["site"]+":"+md["tensor"] {
			return fmt.Errorf("save %s: the file exists and is not a tensor hsdb's save wrote (%d tensors, metadata without Save's %q); --force replaces only those", path, len(names), k)
		}
	}
	return nil
}

// writeNPY writes t to path as .npy through a temporary file: written,
// synced, re-read and compared, then put in place by publishSaved (a file
// made at path meanwhile is never replaced; with force, only one Save
// wrote).
func writeNPY(path string, t *tensor.Tensor, force bool) (err error) {
	data := npyBytes(t)
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	back, err := os.ReadFile(tmp)
	if err != nil {
		return fmt.Errorf("save %s: re-reading: %w", path, err)
	}
	if !bytes.Equal(back, data) {
		return fmt.Errorf("save %s: the file read back differs from what was written", path)
	}
	if err = os.Chmod(tmp, 0o644); err == nil {
		err = publishSaved(tmp, path, force)
	}
	if _, ok := asRefusal(err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}
