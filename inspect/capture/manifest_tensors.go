package capture

import (
	"bytes"
	"encoding/json"
	"fmt"

	"hsdb/engine/tensor"
)

// TensorRecords are a sequence record's tensors by name in its file
// (SeqRecord.Tensors). They decode entry by entry, each checked as it is
// read, so that what a manifest's tensors take in memory stays near what
// they take in the file: a map entry costs some 100-170 bytes whatever
// the entry's size in the file, and entries of a few bytes ("t1":{})
// held a record's tensors at 10-14 times their bytes (bounded only by
// MaxManifestBytes: some 28 GB for a 2 GiB manifest). Every entry hsdb
// writes (dump_seq.go, dump_format.go) holds a shape, a safetensors dtype
// and a 64-digit sha256, at least 90 bytes of JSON; one that does not is
// refused at the first such entry, before the rest is decoded. The dtype
// is kept as the package's own constant name (tensor.DType's
// SafetensorsName), not one string per entry. A shape holds at most
// MaxRecordDims dims, refused at the first one past it: a shape's dims
// take 8 bytes each in memory and as little as 2 in the file ("0,"), so
// a shape of millions held 5 times its bytes.
type TensorRecords map[string]TensorRecord

// UnmarshalJSON decodes a tensors object (null: none) as described on
// TensorRecords. Errors name the entry and what it lacks: a dtype that is
// no safetensors dtype, a sha256 that is not 64 lowercase hex digits (as
// hsdb writes it), or bad JSON. A shape that disagrees with the file (a
// negative size too) is left to check's checksums rule, which names both.
func (ts *TensorRecords) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*ts = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("tensors is not a JSON object")
	}
	out := TensorRecords{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var raw struct {
			Shape  recordShape `json:"shape"`
			DType  string      `json:"dtype"`
			SHA256 string      `json:"sha256"`
		}
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("tensors[%s]: %w", QuoteFileText(name), err)
		}
		r := TensorRecord{Shape: raw.Shape, DType: raw.DType, SHA256: raw.SHA256}
		if err := r.intern(); err != nil {
			return fmt.Errorf("tensors[%s]: %w", QuoteFileText(name), err)
		}
		out[name] = r
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	*ts = out
	return nil
}

// MaxRecordDims is the most dims a manifest's tensors entry may give its
// tensor: hsdb writes at most 3 (input_ids [len], hidden_states [len,
// hidden], speculators' hidden_states [len, ids, hidden], SpecForge's
// aux_hidden_state [1, len, 3·hidden]); 8 as the workers' wire takes
// (engine/worker).
const MaxRecordDims = 8

// recordShape is a tensors entry's shape as it decodes: its dims are read
// one by one and a shape of more than MaxRecordDims is refused at the
// first dim past them, before it takes memory.
type recordShape []int

// UnmarshalJSON decodes a JSON array of integers (null: none) of at most
// MaxRecordDims elements. Errors: not an array, an element that is no
// int, or too many dims (naming MaxRecordDims).
func (s *recordShape) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("shape is not a JSON array")
	}
	out := recordShape{}
	for dec.More() {
		if len(out) == MaxRecordDims {
			return fmt.Errorf("shape has more than %d dims (hsdb writes at most 3)", MaxRecordDims)
		}
		var d int
		if err := dec.Decode(&d); err != nil {
			return fmt.Errorf("shape: %w", err)
		}
		out = append(out, d)
	}
	*s = out
	return nil
}

// intern checks a decoded tensor record's dtype and sha256 and replaces
// its dtype by the package's constant of the same name.
func (r *TensorRecord) intern() error {
	dt, ok := tensor.FromSafetensors(r.DType)
	if !ok {
		return fmt.Errorf("dtype %s is no safetensors dtype (F32, BF16, F16, I64, ...)", QuoteFileText(r.DType))
	}
	r.DType = dt.SafetensorsName()
	if !isSHA256Hex(r.SHA256) {
		return fmt.Errorf("sha256 %s is not 64 lowercase hex digits (the sha256 of the tensor's bytes, as hsdb writes it)", QuoteFileText(r.SHA256))
	}
	return nil
}

// isSHA256Hex says whether s is a sha256 as hex.EncodeToString writes it.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
