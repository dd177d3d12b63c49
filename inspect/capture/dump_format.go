package capture

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// This file writes and re-reads the trainers' per-sample files
// (FormatSpeculators, FormatSpecForge) with the guarantees of hsdb's own
// dump: each file is built in memory, written to a temporary name, fsynced,
// renamed, then re-read from disk and checked — the file's sha256, every
// tensor's shape, dtype and sha256, the token ids, and each layer's slice
// byte-equal to what was captured — before the sidecar manifest
// (manifest.json, which neither trainer reads: speculators opens
// hs_{idx}.safetensors by name, SpecForge lists *.ckpt and *.ckpt.gz)
// records it.

// trainerFile returns the path of sequence index idx relative to the dump
// directory: hs_{idx}.safetensors, or rows_{g}-{g+2000}/data_{idx}.ckpt[.gz].
func trainerFile(f Format, idx int, compress bool) string {
	if f == FormatSpeculators {
		return fmt.Sprintf("hs_%d.safetensors", idx)
	}
	g := idx / SpecForgeGroupSize * SpecForgeGroupSize
	ext := ".ckpt"
	if compress {
		ext = ".ckpt.gz"
	}
	return fmt.Sprintf("rows_%d-%d/data_%d%s", g, g+SpecForgeGroupSize, idx, ext)
}

// trainerSources returns each plan source's captured rows converted to the
// file dtype ([len, hidden] each), checking every one was captured with
// the sequence's length and the model's width.
func (w *DumpWriter) trainerSources(s *SeqCapture) ([]*tensor.Tensor, error) {
	n := s.Len()
	out := make([]*tensor.Tensor, len(w.plan.Srcs))
	for i, src := range w.plan.Srcs {
		t, ok := s.Tensors[src.Key()]
		if !ok {
			return nil, fmt.Errorf("%w: %w for %s (%s)", ErrInvalid, ErrNotCaptured, src.Key(), w.plan.Lines[i])
		}
		if len(t.Shape) == 2 && t.Shape[0] < n && (w.hidden <= 0 || t.Shape[1] == w.hidden) {
			// A decode step stopped before this source's site appended its row.
			return nil, fmt.Errorf("%w: %s has %d rows for %d tokens: %w for its last %d (%s)", ErrInvalid, src.Key(), t.Shape[0], n, ErrNotCaptured, n-t.Shape[0], w.plan.Lines[i])
		}
		if len(t.Shape) != 2 || t.Shape[0] != n || (w.hidden > 0 && t.Shape[1] != w.hidden) {
			return nil, fmt.Errorf("%w: %s is %s, want [%d, %d]", ErrInvalid, src.Key(), tensor.ShapeString(t.Shape), n, w.hidden)
		}
		t, err := convertFinite(src.Key(), t, w.dtype)
		if err != nil {
			return nil, err
		}
		if nan, inf := nonFinite(t); nan+inf > 0 {
			return nil, fmt.Errorf("%w: %s has %d NaN and %d Inf", ErrInvalid, src.Key(), nan, inf)
		}
		out[i] = t
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if bytes.Equal(out[i].Data, out[j].Data) {
				return nil, fmt.Errorf("%w: %s and %s are identical", ErrInvalid, w.plan.Lines[i], w.plan.Lines[j])
			}
		}
	}
	return out, nil
}

// nonFinite counts NaN and Inf in a float tensor from its bits (an
// exponent of all ones: Inf with a zero mantissa, NaN otherwise), without
// widening to float32. Eight bytes at a time are tested for a lane with an
// all-ones exponent first (the zero-lane test of Hacker's Delight 6-1 on
// the exponent bits XOR the mask); only words with one are counted value
// by value.
func nonFinite(t *tensor.Tensor) (nan, inf int) {
	var exp, man uint32
	var exp8, ones, highs uint64
	size := t.DType.Size()
	switch t.DType {
	case tensor.BF16:
		exp, man = 0x7f80, 0x007f
		exp8, ones, highs = 0x7f807f807f807f80, 0x0001000100010001, 0x8000800080008000
	case tensor.F16:
		exp, man = 0x7c00, 0x03ff
		exp8, ones, highs = 0x7c007c007c007c00, 0x0001000100010001, 0x8000800080008000
	case tensor.F32:
		exp, man = 0x7f800000, 0x007fffff
		exp8, ones, highs = 0x7f8000007f800000, 0x0000000100000001, 0x8000000080000000
	default:
		m := tensor.MomentsF32(t.ToF32())
		return int(m.NaN), int(m.Inf)
	}
	count := func(b []byte) {
		for i := 0; i+size <= len(b); i += size {
			var v uint32
			if size == 2 {
				v = uint32(binary.LittleEndian.Uint16(b[i:]))
			} else {
				v = binary.LittleEndian.Uint32(b[i:])
			}
			if v&exp == exp {
				if v&man != 0 {
					nan++
				} else {
					inf++
				}
			}
		}
	}
	d := t.Data
	i := 0
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i:])&exp8 ^ exp8 // a lane is 0 where the exponent is all ones
		if (x-ones)&^x&highs != 0 {
			count(d[i : i+8])
		}
	}
	count(d[i:])
	return nan, inf
}

// interleave lays k tensors [n, h] of one dtype side by side per row:
// [n, k·h] (torch.stack(dim=1) then flatten, or torch.cat(dim=-1)).
// The result is a getBuf buffer.
func interleave(ts []*tensor.Tensor) []byte {
	n, rb := ts[0].Shape[0], ts[0].Shape[1]*ts[0].DType.Size()
	out := getBuf(n * rb * len(ts))[:0]
	for r := range n {
		for _, t := range ts {
			out = append(out, t.Data[r*rb:(r+1)*rb]...)
		}
	}
	return out
}

// trainerTensors builds the file's tensors in file order, and returns the
// getBuf buffer of the interleaved layers they hold.
func (w *DumpWriter) trainerTensors(s *SeqCapture, srcs []*tensor.Tensor) ([]safetensors.Named, []byte) {
	n := s.Len()
	ids := make([]int64, n)
	for i, v := range s.IDs {
		ids[i] = int64(v)
	}
	h, dt := w.hidden, w.dtype
	if w.plan.Format == FormatSpeculators {
		hs := &tensor.Tensor{Shape: []int{n, len(srcs), h}, DType: dt, Data: interleave(srcs)}
		return []safetensors.Named{{Name: "hidden_states", T: hs}, {Name: "token_ids", T: tensor.FromI64(ids, n)}}, hs.Data
	}
	mask := s.LossMask
	if mask == nil { // SpecForge's reader needs one; a row without loss_mask trains on every token
		mask = make([]int64, n)
		for i := range mask {
			mask[i] = 1
		}
	}
	aux := interleave(srcs[:len(srcs)-1])
	return []safetensors.Named{
		{Name: "input_ids", T: tensor.FromI64(ids, n)},
		{Name: "loss_mask", T: tensor.FromI64(mask, n)},
		{Name: "hidden_state", T: &tensor.Tensor{Shape: []int{1, n, h}, DType: dt, Data: srcs[len(srcs)-1].Data}},
		{Name: "aux_hidden_state", T: &tensor.Tensor{Shape: []int{1, n, (len(srcs) - 1) * h}, DType: dt, Data: aux}},
	}, aux
}

// encodeTrainerFile returns the bytes of the file.
func (w *DumpWriter) encodeTrainerFile(named []safetensors.Named, id string) ([]byte, error) {
	size := 1 << 12
	for _, nt := range named {
		size += len(nt.T.Data)
	}
	buf := bytes.NewBuffer(getBuf(size)[:0])
	if w.plan.Format == FormatSpeculators {
		meta := map[string]string{"format": "pt", "hsdb": ManifestFormat, "sequence": id,
			"convention": string(FormatSpeculators), "layer_ids": joinInts(w.plan.IDs)}
		if err := safetensors.Write(buf, named, meta); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	ents := make([]TorchEntry, len(named))
	for i, nt := range named {
		ents[i] = TorchEntry{Key: nt.Name, T: nt.T}
	}
	if !w.compress {
		if err := WriteTorchSave(buf, "archive", ents); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	zw, _ := gzip.NewWriterLevel(buf, 6) // SpecForge's default compression_level
	if err := WriteTorchSave(zw, "archive", ents); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTrainerSeq writes one sequence in the plan's format and validates it.
func (w *DumpWriter) writeTrainerSeq(s *SeqCapture, id string) (SeqRecord, error) {
	file := trainerFile(w.plan.Format, s.Seq, w.compress)
	path := filepath.Join(w.stage, file)
	rec := SeqRecord{ID: id, Index: s.Seq, Length: s.Len(), File: file, LossMask: s.LossMask != nil, Tensors: map[string]TensorRecord{}}
	fail := func(err error) (SeqRecord, error) {
		return rec, fmt.Errorf("dump %s: sequence %s: %w", w.dir, id, err)
	}
	srcs, err := w.trainerSources(s)
	if err != nil {
		return fail(err)
	}
	named, inter := w.trainerTensors(s, srcs)
	for _, nt := range named {
		rec.Tensors[nt.Name] = TensorRecord{Shape: append([]int(nil), nt.T.Shape...), DType: nt.T.DType.SafetensorsName(), SHA256: sha256Hex(nt.T.Data)}
	}
	data, err := w.encodeTrainerFile(named, id)
	putBuf(inter) // encoded: the file's bytes hold it now
	if err != nil {
		return fail(err)
	}
	defer putBuf(data)
	rec.FileSHA256, rec.Bytes = sha256Hex(data), int64(len(data))
	if dumpTestHook != nil {
		if err := runTestHook(path); err != nil {
			return fail(fmt.Errorf("writing %s: %w", path, diskFull(err)))
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fail(diskFull(err))
	}
	if err := writeFileSynced(path, data); err != nil { // the directory is fsynced by commit
		return fail(diskFull(err))
	}
	if err := verifyTrainerFile(path, w.plan.Format, rec, data, s.IDs, srcs); err != nil {
		os.Remove(path)
		return fail(err)
	}
	rec.Validated = true
	return rec, nil
}

// verifyTrainerFile re-reads a trainer file from disk and checks it
// against its record: the file's bytes equal to wrote (a fresh write), or
// its sha256 as recorded (a resume, wrote nil); for speculators, the safetensors
// header parsed afresh (hidden_states and token_ids only, each with the
// recorded shape, dtype and sha256); for SpecForge, the zip archive read
// afresh (after gunzip for .gz): exactly the records torch.save writes,
// data.pkl equal to the pickle of the recorded tensors and each data/N
// record the recorded tensor's bytes. With ids and srcs (a fresh write,
// not a resume), the token ids must equal ids and each layer's slice of
// the file (hidden_states[:, j], aux_hidden_state's j-th block of columns,
// hidden_state) must equal srcs[j] byte for byte. Errors wrap ErrInvalid
// and name the file and tensor.
func verifyTrainerFile(path string, f Format, rec SeqRecord, wrote []byte, ids []int32, srcs []*tensor.Tensor) error {
	if err := CheckSeqPath(strings.TrimSuffix(path, filepath.FromSlash(rec.File)), rec.File); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	data, err := readBack(path, rec.Bytes)
	if err != nil {
		return fmt.Errorf("%w: re-reading %s: %w", ErrInvalid, path, err)
	}
	defer putBuf(data)
	switch {
	case wrote != nil: // a fresh write: the bytes on disk are the bytes whose sha256 was recorded
		if !bytes.Equal(data, wrote) {
			return fmt.Errorf("%w: %s reads back %d bytes that differ from the %d written", ErrInvalid, path, len(data), len(wrote))
		}
	case rec.FileSHA256 != "":
		if got := sha256Hex(data); got != rec.FileSHA256 {
			return fmt.Errorf("%w: %s has sha256 %s, recorded %s", ErrInvalid, path, got, rec.FileSHA256)
		}
	}
	var ts map[string]*tensor.Tensor
	if f == FormatSpeculators {
		ts, err = readSafetensorsBytes(path, data)
	} else {
		ts, err = readTorchSaveBytes(path, data, rec)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var names []string
	for k := range rec.Tensors {
		names = append(names, k)
	}
	for _, name := range names {
		t, ok := ts[name]
		r := rec.Tensors[name]
		if !ok {
			return fmt.Errorf("%w: %s holds no %s", ErrInvalid, path, name)
		}
		if t.DType.SafetensorsName() != r.DType || !slices.Equal(t.Shape, r.Shape) {
			return fmt.Errorf("%w: %s: %s reads as %s %s, recorded %s %s", ErrInvalid, path, name, t.DType, tensor.ShapeString(t.Shape), r.DType, tensor.ShapeString(r.Shape))
		}
		// A fresh write compares the file's sha256 (above) and every layer
		// byte for byte with what was captured (below); a resume has only
		// the records, so each tensor's digest is checked too.
		if srcs == nil || name == "token_ids" || name == "input_ids" || name == "loss_mask" {
			if got := sha256Hex(t.Data); got != r.SHA256 {
				return fmt.Errorf("%w: %s: %s has sha256 %s, recorded %s", ErrInvalid, path, name, got, r.SHA256)
			}
		}
	}
	if len(ts) != len(rec.Tensors) {
		return fmt.Errorf("%w: %s holds %d tensors, recorded %d", ErrInvalid, path, len(ts), len(rec.Tensors))
	}
	if srcs == nil {
		return nil
	}
	idKey, layerKeys := "input_ids", []string{"aux_hidden_state", "hidden_state"}
	if f == FormatSpeculators {
		idKey, layerKeys = "token_ids", []string{"hidden_states"}
	}
	got := ts[idKey]
	for i, v := range ids {
		if got.Int(i) != int64(v) {
			return fmt.Errorf("%w: %s: %s[%d] = %d, the input has %d", ErrInvalid, path, idKey, i, got.Int(i), v)
		}
	}
	// Columns of each layer in the file, in source order.
	j := 0
	for _, k := range layerKeys {
		t := ts[k]
		n := rec.Length
		width := t.Shape[len(t.Shape)-1]
		if f == FormatSpeculators {
			width = t.Shape[1] * t.Shape[2]
		}
		h := srcs[0].Shape[1]
		rb := h * t.DType.Size()
		for c := 0; c < width/h; c++ {
			src := srcs[j]
			for r := range n {
				a := t.Data[(r*width+c*h)*t.DType.Size():][:rb]
				if !bytes.Equal(a, src.Data[r*rb:(r+1)*rb]) {
					return fmt.Errorf("%w: %s: %s at token %d, block %d differs from the captured layer", ErrInvalid, path, k, r, c)
				}
			}
			j++
		}
	}
	if j != len(srcs) {
		return fmt.Errorf("%w: %s holds %d layers, captured %d", ErrInvalid, path, j, len(srcs))
	}
	return nil
}

// readSafetensorsBytes parses a safetensors file held in memory.
func readSafetensorsBytes(path string, data []byte) (map[string]*tensor.Tensor, error) {
	sf, err := safetensors.FromBytes(path, data)
	if err != nil {
		return nil, err
	}
	out := map[string]*tensor.Tensor{}
	for _, n := range sf.Names() {
		t, err := sf.Tensor(n)
		if err != nil {
			return nil, err
		}
		out[n] = t
	}
	return out, nil
}

// readTorchSaveBytes re-reads an archive hsdb wrote (gzip-wrapped when it
// starts with gzip's magic): it must hold exactly torch.save's records
// under one directory, data.pkl equal to TorchPickle of the recorded
// tensors in record order (input_ids, loss_mask, hidden_state,
// aux_hidden_state), and returns data/N as those tensors.
func readTorchSaveBytes(path string, data []byte, rec SeqRecord) (map[string]*tensor.Tensor, error) {
	order := []string{"input_ids", "loss_mask", "hidden_state", "aux_hidden_state"}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		var err error
		if data, err = gunzipWithin(path, data, rec, order); err != nil { // a gzip bomb is refused at its bound
			return nil, err
		}
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: not a zip archive: %w", path, err)
	}
	recs := map[string][]byte{}
	for _, zf := range zr.File {
		name, ok := strings.CutPrefix(zf.Name, "archive/")
		if !ok {
			return nil, fmt.Errorf("%s: record %s outside archive/", path, zf.Name)
		}
		if bound := torchSaveRecordBound(rec, order, name); zf.UncompressedSize64 > uint64(bound) { // before inflating it
			return nil, fmt.Errorf("%s: record %s declares %d bytes uncompressed, more than the %d it may hold", path, zf.Name, zf.UncompressedSize64, bound)
		}
		r, err := zf.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, zf.Name, err)
		}
		b, err := io.ReadAll(r) // checks the CRC-32 and that it yields no more than it declares
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, zf.Name, err)
		}
		recs[name] = b
	}
	var ents []TorchEntry
	out := map[string]*tensor.Tensor{}
	for i, k := range order {
		r, ok := rec.Tensors[k]
		if !ok {
			return nil, fmt.Errorf("%s: the record lists no %s", path, k)
		}
		dt, _ := tensor.FromSafetensors(r.DType)
		b, ok := recs[fmt.Sprintf("data/%d", i)]
		if !ok {
			return nil, fmt.Errorf("%s: no record data/%d (%s)", path, i, k)
		}
		t := &tensor.Tensor{Shape: append([]int(nil), r.Shape...), DType: dt, Data: b}
		if len(b) != tensor.Numel(r.Shape)*dt.Size() {
			return nil, fmt.Errorf("%s: data/%d (%s) has %d bytes, want %d", path, i, k, len(b), tensor.Numel(r.Shape)*dt.Size())
		}
		ents = append(ents, TorchEntry{Key: k, T: t})
		out[k] = t
	}
	pkl, err := TorchPickle(ents)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(recs["data.pkl"], pkl) {
		return nil, fmt.Errorf("%s: data.pkl differs from the pickle of the recorded tensors", path)
	}
	want := map[string]string{"data.pkl": "", ".format_version": "1", ".storage_alignment": "64", "byteorder": "little", "version": "3\n"}
	for k, v := range want {
		if b, ok := recs[k]; !ok || (v != "" && string(b) != v) {
			return nil, fmt.Errorf("%s: record %s is %q, want %q", path, k, b, v)
		}
	}
	if len(recs) != len(want)+len(order) {
		return nil, fmt.Errorf("%s: %d records, torch.save writes %d", path, len(recs), len(want)+len(order))
	}
	return out, nil
}
