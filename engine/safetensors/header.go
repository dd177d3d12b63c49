package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"hsdb/engine/jsonerr"
	"hsdb/engine/tensor"
)

// MaxHeaderSize is the largest JSON header accepted, in bytes: 100,000,000,
// the Rust crate's MAX_HEADER_SIZE (a guard against reading a huge bogus
// length as a header).
const MaxHeaderSize = 100_000_000

// MaxDims is the most dimensions a tensor's shape may have: 64, numpy 2's
// NPY_MAXDIMS (torch.Tensor.numpy() and safetensors' numpy loader cannot
// hold more). A header of 100 MB can list 50 million dimensions of 1,
// which decoded into an []int of 400 MB and took gigabytes and half a
// minute to read before anything looked at the file.
const MaxDims = 64

// metadataKey is the reserved header key holding string-to-string metadata.
const metadataKey = "__metadata__"

// TensorInfo describes one tensor of a file as its header declares it.
type TensorInfo struct {
	// Name is the tensor's key in the header (an HF module path such as
	// "model.layers.3.mlp.down_proj.weight").
	Name string
	// DType is the element type.
	DType tensor.DType
	// Shape is the size of each dimension, outermost first ([] for a scalar).
	Shape []int
	// Begin and End are the header's data_offsets: the tensor's bytes are
	// [Begin, End) counted from the start of the data area.
	Begin, End int64
	// Offset is the absolute position of Begin in the file: 8 + N + Begin,
	// where N is the header length.
	Offset int64
}

// Bytes returns the tensor's size in bytes, End − Begin.
func (ti TensorInfo) Bytes() int64 { return ti.End - ti.Begin }

// header is a parsed and validated header.
type header struct {
	dataStart int64        // 8 + N
	infos     []TensorInfo // sorted by (Begin, End), then header order
	meta      map[string]string
}

// parseHeader validates buf, the whole content of the file at path, and
// returns its tensors. It checks, in this order: the length prefix, the
// header's size and JSON structure, every entry's dtype, shape and offsets,
// and finally that the tensors tile the data area exactly (no overlap, no
// hole, nothing after the last tensor), as the Rust crate's read_metadata
// and Metadata::validate do. It never panics on any input.
func parseHeader(path string, buf []byte) (*header, error) {
	if len(buf) < 8 {
		return nil, fmt.Errorf("%s: %w: file is %d bytes, need at least the 8-byte header length", path, ErrTooShort, len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%s: %w: header length is %d bytes, limit is %d", path, ErrHeaderTooLarge, n, MaxHeaderSize)
	}
	if n > uint64(len(buf)-8) {
		return nil, fmt.Errorf("%s: %w: header length is %d bytes but only %d bytes follow the length prefix", path, ErrHeaderLength, n, len(buf)-8)
	}
	raw := buf[8 : 8+n]
	h := &header{dataStart: int64(8 + n)}
	dataLen := int64(len(buf)) - h.dataStart

	seen := map[string]struct{}{}
	var past *TensorInfo // the first entry, in header order, ending beyond the data area
	err := splitHeader(path, raw, func(key string, val []byte) error {
		n := len(seen)
		if seen[key] = struct{}{}; len(seen) == n { // one probe of the map, not two
			// Stricter than the crate (serde keeps the last duplicate
			// silently): two entries for one name would lose data.
			return fmt.Errorf("%s: tensor %q: %w: the header has the key twice", path, key, ErrDuplicateName)
		}
		if key == metadataKey {
			var err error
			h.meta, err = parseMetadata(path, val)
			return err
		}
		ti, err := parseEntry(path, key, val)
		if err != nil {
			return err
		}
		if ti.End > dataLen && past == nil {
			// Reported once the whole header is read: a header whose
			// tensors tile a longer data area is a file cut short.
			p := ti
			past = &p
		}
		ti.Offset = h.dataStart + ti.Begin
		h.infos = append(h.infos, ti)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if past != nil {
		return nil, outOfRangeError(path, *past, h, dataLen)
	}
	if err := checkTiling(path, h.infos, dataLen); err != nil {
		return nil, err
	}
	return h, nil
}

// outOfRangeError reports past, a tensor ending beyond the data area of
// dataLen bytes. When the header's tensors tile a data area of their own
// exactly (no overlap, no hole), the header is consistent and the file is
// the short one (the way a truncated write or copy looks), which the
// message says with the bytes missing; otherwise it names the tensor alone.
func outOfRangeError(path string, past TensorInfo, h *header, dataLen int64) error {
	err := fmt.Errorf("%s: tensor %q: %w: data_offsets [%d, %d] but the data area is %d bytes", path, past.Name, ErrOutOfRange, past.Begin, past.End, dataLen)
	var end int64
	for _, ti := range h.infos {
		end = max(end, ti.End)
	}
	if end > math.MaxInt64-h.dataStart || checkTiling(path, h.infos, end) != nil {
		return err
	}
	return fmt.Errorf("%w: the file is cut short (an interrupted write or copy?): its header's tensors fill %d bytes of data, so the file should be %d bytes; it is %d (%d missing)",
		err, end, h.dataStart+end, h.dataStart+dataLen, end-dataLen)
}

// checkTiling sorts infos by offset and checks that they cover [0, dataLen)
// exactly once. The Rust crate (Metadata::validate) sorts the same way and
// rejects any tensor not starting where the previous ended (InvalidOffset)
// and a last end short of the file's end (MetadataIncompleteBuffer); hsdb
// follows it, reporting overlaps, holes and trailing bytes separately. A
// zero-byte tensor must therefore sit at a boundary between tensors.
func checkTiling(path string, infos []TensorInfo, dataLen int64) error {
	sort.SliceStable(infos, func(i, j int) bool {
		if infos[i].Begin != infos[j].Begin {
			return infos[i].Begin < infos[j].Begin
		}
		return infos[i].End < infos[j].End
	})
	var covered int64 // end of the furthest-reaching tensor so far
	reach := -1       // index of that tensor
	for i, ti := range infos {
		switch {
		case ti.Begin < covered:
			o := infos[reach]
			return fmt.Errorf("%s: tensors %q [%d, %d] and %q [%d, %d]: %w", path, o.Name, o.Begin, o.End, ti.Name, ti.Begin, ti.End, ErrOverlap)
		case ti.Begin > covered:
			return fmt.Errorf("%s: tensor %q: %w: bytes [%d, %d) before it belong to no tensor (expected it to begin at %d, found %d)", path, ti.Name, ErrHole, covered, ti.Begin, covered, ti.Begin)
		}
		if ti.End > covered || reach < 0 {
			covered, reach = ti.End, i
		}
	}
	if covered != dataLen {
		if reach < 0 {
			return fmt.Errorf("%s: %w: the header has no tensors but the data area is %d bytes (%d trailing bytes)", path, ErrIncomplete, dataLen, dataLen)
		}
		return fmt.Errorf("%s: %w: the data area is %d bytes but the last tensor %q ends at %d (%d trailing bytes)", path, ErrIncomplete, dataLen, infos[reach].Name, covered, dataLen-covered)
	}
	return nil
}

// splitHeader checks that raw is one JSON object, then calls f with each
// of its members in file order, duplicates included, stopping at f's first
// error and returning it.
func splitHeader(path string, raw []byte, f func(key string, val []byte) error) error {
	if !utf8.Valid(raw) {
		return fmt.Errorf("%s: %w: header is not valid UTF-8", path, ErrHeaderJSON)
	}
	if err := jsonerr.CheckSurrogates(raw); err != nil { // a tensor name encoding/json would turn into U+FFFD
		return fmt.Errorf("%s: %w: %v", path, ErrHeaderJSON, err)
	}
	// One pass of the scanner (jsonscan.go) over a valid object; anything
	// else is encoding/json's to word.
	if i := skipWS(raw, 0); i < len(raw) && raw[i] == '{' {
		if end := skipValue(raw, i, 0); end >= 0 && skipWS(raw, end) == len(raw) {
			if err := members(raw[i:end], f); err != errNotObject {
				return err
			}
		}
	}
	var probe json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s: %w: %v (at byte %d of the %d-byte header)", path, ErrHeaderJSON, err, se.Offset, len(raw))
		}
		return fmt.Errorf("%s: %w: %v", path, ErrHeaderJSON, err)
	}
	if probe[0] != '{' {
		return fmt.Errorf("%s: %w: header is a JSON %s", path, ErrHeaderNotObject, jsonerr.Kind(probe))
	}
	dec := json.NewDecoder(bytes.NewReader(probe))
	if _, err := dec.Token(); err != nil { // '{'
		return fmt.Errorf("%s: %w: %v", path, ErrHeaderJSON, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w: %v", path, ErrHeaderJSON, err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return fmt.Errorf("%s: %w: value of %q: %v", path, ErrHeaderJSON, key, err)
		}
		if err := f(key, val); err != nil {
			return err
		}
	}
	return nil
}

// parseMetadata decodes __metadata__: an object of strings, or null (the
// crate's Option<HashMap<String, String>> accepts both).
func parseMetadata(path string, v json.RawMessage) (map[string]string, error) {
	if jsonerr.Kind(v) == "null" {
		return nil, nil
	}
	if jsonerr.Kind(v) != "object" {
		return nil, fmt.Errorf("%s: %w: it is a JSON %s, expected an object", path, ErrMetadata, jsonerr.Kind(v))
	}
	m := map[string][]byte{} // a key given twice keeps its last value, as in encoding/json
	var order []string
	if members(v, func(k string, rv []byte) error {
		if _, ok := m[k]; !ok {
			order = append(order, k)
		}
		m[k] = rv
		return nil
	}) != nil {
		return nil, fmt.Errorf("%s: %w: it is not a valid JSON object", path, ErrMetadata)
	}
	out := make(map[string]string, len(m))
	for _, k := range order {
		rv := m[k]
		s, ok := decodeString(rv)
		if jsonerr.Kind(rv) != "string" || !ok {
			return nil, fmt.Errorf("%s: %w: key %q is a JSON %s, expected a string", path, ErrMetadata, k, jsonerr.Kind(rv))
		}
		out[k] = s
	}
	return out, nil
}

// knownDTypes lists the safetensors dtype names hsdb reads, for messages.
func knownDTypes() string {
	var names []string
	for d := tensor.DType(1); d.Size() != 0; d++ {
		names = append(names, d.SafetensorsName())
	}
	return strings.Join(names, ", ")
}

// parseEntry decodes and checks one tensor entry (everything but its
// position relative to other tensors and to the data area's length).
func parseEntry(path, name string, v json.RawMessage) (TensorInfo, error) {
	ti := TensorInfo{Name: name}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: tensor %q: %w: %s", path, name, ErrTensorEntry, fmt.Sprintf(format, a...))
	}
	if k := jsonerr.Kind(v); k != "object" {
		return ti, bad("entry is a JSON %s, expected an object with dtype, shape and data_offsets", k)
	}
	// The three fields (a field given twice keeps its last value, as in
	// encoding/json); unknown extra fields are ignored, as serde does for
	// TensorInfo.
	var fields [3][]byte
	if members(v, func(k string, fv []byte) error {
		switch k {
		case "dtype":
			fields[0] = fv
		case "shape":
			fields[1] = fv
		case "data_offsets":
			fields[2] = fv
		}
		return nil
	}) != nil {
		return ti, bad("entry is not a valid JSON object")
	}
	dtypeV, shapeV, offsetsV := fields[0], fields[1], fields[2]
	for i, f := range []string{"dtype", "shape", "data_offsets"} {
		if fields[i] == nil {
			return ti, bad("missing field %q", f)
		}
	}

	dt, ok := decodeString(dtypeV)
	if k := jsonerr.Kind(dtypeV); k != "string" || !ok {
		return ti, bad("dtype is a JSON %s, expected a string", k)
	}
	d, ok := tensor.FromSafetensors(dt)
	if !ok {
		return ti, fmt.Errorf("%s: tensor %q: %w %q (hsdb reads %s)", path, name, ErrUnknownDType, dt, knownDTypes())
	}
	ti.DType = d

	dims, err := intArray(shapeV, MaxDims)
	if err != nil {
		return ti, bad("shape %s", err)
	}
	numel := int64(1)
	ti.Shape = make([]int, len(dims))
	for i, x := range dims {
		if x.neg {
			return ti, fmt.Errorf("%s: tensor %q: %w: dimension %d is -%d, expected >= 0", path, name, ErrBadShape, i, x.mag)
		}
		if x.mag > math.MaxInt64 || x.mag > uint64(math.MaxInt) {
			return ti, fmt.Errorf("%s: tensor %q: %w: dimension %d is %d, which overflows", path, name, ErrBadShape, i, x.mag)
		}
		dim := int64(x.mag)
		if dim != 0 && numel > math.MaxInt64/dim {
			return ti, fmt.Errorf("%s: tensor %q: %w: product of shape %s overflows int64", path, name, ErrBadShape, rawText(shapeV))
		}
		numel *= dim
		ti.Shape[i] = int(dim)
	}
	es := int64(d.Size())
	if numel > math.MaxInt64/es {
		return ti, fmt.Errorf("%s: tensor %q: %w: shape %s of %s (%d bytes each) overflows int64 bytes", path, name, ErrBadShape, tensor.ShapeString(ti.Shape), dt, es)
	}
	nbytes := numel * es

	offs, err := intArray(offsetsV, MaxDims) // bounded as a shape, so that a count can be reported
	if err != nil {
		return ti, bad("data_offsets %s, expected [begin, end]", err)
	}
	if len(offs) != 2 {
		return ti, bad("data_offsets has %d elements, expected [begin, end]", len(offs))
	}
	for _, o := range offs {
		if o.neg {
			return ti, fmt.Errorf("%s: tensor %q: %w: data_offsets %s has a negative offset", path, name, ErrBadOffsets, rawText(offsetsV))
		}
		if o.mag > math.MaxInt64 {
			// Beyond any file; report as out of range like any large end.
			return ti, fmt.Errorf("%s: tensor %q: %w: data_offsets %s exceed any file size", path, name, ErrOutOfRange, rawText(offsetsV))
		}
	}
	ti.Begin, ti.End = int64(offs[0].mag), int64(offs[1].mag)
	if ti.Begin > ti.End {
		return ti, fmt.Errorf("%s: tensor %q: %w: begin %d > end %d", path, name, ErrBadOffsets, ti.Begin, ti.End)
	}
	if ti.End-ti.Begin != nbytes {
		return ti, fmt.Errorf("%s: tensor %q: %w: shape %s × %s (%d bytes each) needs %d bytes, data_offsets [%d, %d] span %d",
			path, name, ErrSizeMismatch, tensor.ShapeString(ti.Shape), dt, es, nbytes, ti.Begin, ti.End, ti.End-ti.Begin)
	}
	return ti, nil
}

// jsonInt is a JSON integer as sign and magnitude; mag saturates at
// MaxUint64 for literals too large for it.
type jsonInt struct {
	neg bool
	mag uint64
}

// intArray decodes a JSON array of at most limit integers written without
// fraction or exponent (serde_json refuses 2.0 or 1e3 for usize too). A
// longer array is refused before its elements are decoded.
func intArray(v []byte, limit int) ([]jsonInt, error) {
	if v = trimWS(v); len(v) == 0 || v[0] != '[' {
		return nil, fmt.Errorf("is a JSON %s, expected an array of integers", jsonerr.Kind(v))
	}
	elems, ok := elements(v, limit)
	if !ok {
		return nil, fmt.Errorf("is not a valid JSON array")
	}
	if len(elems) > limit {
		return nil, fmt.Errorf("has more than %d elements", limit)
	}
	out := make([]jsonInt, len(elems))
	for i, e := range elems {
		e = trimWS(e)
		neg := len(e) > 0 && e[0] == '-'
		digits := e
		if neg {
			digits = e[1:]
		}
		if len(digits) == 0 {
			return nil, fmt.Errorf("element %d is %s, expected an integer", i, e)
		}
		var mag uint64 // saturating at MaxUint64, as strconv.ParseUint's ErrRange was read
		for _, c := range digits {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("element %d is %s, expected an integer", i, e)
			}
			d := uint64(c - '0')
			if mag > (math.MaxUint64-d)/10 {
				mag = math.MaxUint64
			} else if mag != math.MaxUint64 {
				mag = mag*10 + d
			}
		}
		out[i] = jsonInt{neg && mag != 0, mag}
	}
	return out, nil
}

// rawText returns a JSON value as compact text for messages, shortened.
func rawText(v []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		b.Reset()
		b.Write(v)
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
