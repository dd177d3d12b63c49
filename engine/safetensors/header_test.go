package safetensors

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

// badFile is a hand-built invalid file, the sentinel Open must return and
// fragments its message must contain besides the file's path (the tensor
// name, and what was expected versus found).
type badFile struct {
	name string
	data []byte
	want error
	frag []string
}

// lenPrefix returns an 8-byte header length n followed by rest.
func lenPrefix(n uint64, rest string) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, n)
	return append(b, rest...)
}

// badFiles lists one crafted file per validation rule. The byte counts in
// the fragments are worked out by hand from the headers (F32 is 4 bytes).
func badFiles() []badFile {
	entry := func(name, body string) string { return `{"` + name + `":` + body + `}` }
	return []badFile{
		{"too short", []byte{1, 2, 3}, ErrTooShort, []string{"3 bytes"}},
		{"empty file", nil, ErrTooShort, []string{"0 bytes"}},
		{"header length beyond file", lenPrefix(100, `{"a":1}`), ErrHeaderLength, []string{"100 bytes", "only 7 bytes"}},
		{"header too large", lenPrefix(100_000_001, `{}`), ErrHeaderTooLarge, []string{"100000001", "100000000"}},
		{"header length 2^64-1", lenPrefix(1<<64-1, `{}`), ErrHeaderTooLarge, []string{"18446744073709551615"}},
		{"not json", stFile(`{"a":`, nil), ErrHeaderJSON, nil},
		{"empty header", stFile(``, nil), ErrHeaderJSON, nil},
		{"invalid utf8", stFile("{\"\xff\":1}", nil), ErrHeaderJSON, []string{"UTF-8"}},
		{"trailing garbage", stFile(`{} x`, nil), ErrHeaderJSON, nil},
		{"not an object", stFile(`[1,2]`, nil), ErrHeaderNotObject, []string{"array"}},
		{"string header", stFile(`"hi"`, nil), ErrHeaderNotObject, []string{"string"}},
		{"entry not object", stFile(entry("w", `[1]`), nil), ErrTensorEntry, []string{`"w"`, "array"}},
		{"missing data_offsets", stFile(entry("w", `{"dtype":"F32","shape":[1]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, `"data_offsets"`}},
		{"missing dtype", stFile(entry("w", `{"shape":[1],"data_offsets":[0,4]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, `"dtype"`}},
		{"missing shape", stFile(entry("w", `{"dtype":"F32","data_offsets":[0,4]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, `"shape"`}},
		{"dtype number", stFile(entry("w", `{"dtype":4,"shape":[1],"data_offsets":[0,4]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, "dtype is a JSON number"}},
		{"shape string", stFile(entry("w", `{"dtype":"F32","shape":"1","data_offsets":[0,4]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, "shape is a JSON string"}},
		{"shape float", stFile(entry("w", `{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, "1.0"}},
		{"shape quoted int", stFile(entry("w", `{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, `"1"`}},
		{"offsets three", stFile(entry("w", `{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}`), f32le(1)), ErrTensorEntry, []string{`"w"`, "3 elements"}},
		{"offsets null", stFile(entry("w", `{"dtype":"F32","shape":[1],"data_offsets":null}`), f32le(1)), ErrTensorEntry, []string{`"w"`, "null"}},
		{"metadata value not string", stFile(`{"__metadata__":{"format":"pt","n":1}}`, nil), ErrMetadata, []string{`"n"`, "number"}},
		{"metadata array", stFile(`{"__metadata__":["pt"]}`, nil), ErrMetadata, []string{"array"}},
		{"duplicate name", stFile(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1)), ErrDuplicateName, []string{`"w"`}},
		{"unknown dtype", stFile(entry("w", `{"dtype":"U16","shape":[2],"data_offsets":[0,4]}`), f32le(1)), ErrUnknownDType, []string{`"w"`, `"U16"`, "BF16"}},
		{"negative dim", stFile(entry("w", `{"dtype":"F32","shape":[-2],"data_offsets":[0,4]}`), f32le(1)), ErrBadShape, []string{`"w"`, "-2"}},
		{"dim beyond int64", stFile(entry("w", `{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}`), f32le(1)), ErrBadShape, []string{`"w"`, "overflows"}},
		// 2^32 × 2^32 = 2^64 overflows int64.
		{"shape product overflow", stFile(entry("w", `{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}`), f32le(1)), ErrBadShape, []string{`"w"`, "overflows"}},
		// 2^61 elements fit int64 but 2^61 × 4 bytes does not.
		{"bytes overflow", stFile(entry("w", `{"dtype":"F32","shape":[2305843009213693952],"data_offsets":[0,4]}`), f32le(1)), ErrBadShape, []string{`"w"`, "overflows"}},
		// [3] F32 needs 12 bytes; [0, 8] spans 8.
		{"size mismatch", stFile(entry("w", `{"dtype":"F32","shape":[3],"data_offsets":[0,8]}`), f32le(1, 2)), ErrSizeMismatch, []string{`"w"`, "needs 12 bytes", "span 8"}},
		{"begin after end", stFile(entry("w", `{"dtype":"F32","shape":[1],"data_offsets":[8,4]}`), f32le(1, 2)), ErrBadOffsets, []string{`"w"`, "begin 8 > end 4"}},
		{"negative offset", stFile(entry("w", `{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}`), f32le(1)), ErrBadOffsets, []string{`"w"`, "negative"}},
		// [2] F32 = 8 bytes at [0, 8] but only 4 data bytes follow.
		{"beyond data area", stFile(entry("w", `{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`), f32le(1)), ErrOutOfRange, []string{`"w"`, "[0, 8]", "4 bytes"}},
		{"offset beyond int64", stFile(entry("w", `{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}`), nil), ErrOutOfRange, []string{`"w"`}},
		// a = [0, 8], b = [4, 12] share bytes 4..8.
		{"overlap", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, f32le(1, 2, 3)), ErrOverlap, []string{`"a" [0, 8]`, `"b" [4, 12]`}},
		// A zero-byte tensor strictly inside another: the crate rejects it
		// (InvalidOffset) since its begin is not the previous end.
		{"empty inside another", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}}`, f32le(1, 2)), ErrOverlap, []string{`"a"`, `"z"`}},
		// a = [0, 4], b = [8, 12]: bytes 4..8 belong to nobody.
		{"hole", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, f32le(1, 2, 3)), ErrHole, []string{`"b"`, "[4, 8)", "begin at 4, found 8"}},
		{"first not at zero", stFile(entry("w", `{"dtype":"F32","shape":[1],"data_offsets":[4,8]}`), f32le(1, 2)), ErrHole, []string{`"w"`, "[0, 4)"}},
		// One 4-byte tensor in an 8-byte data area.
		{"trailing bytes", stFile(entry("w", `{"dtype":"F32","shape":[1],"data_offsets":[0,4]}`), f32le(1, 2)), ErrIncomplete, []string{`"w"`, "8 bytes", "4 trailing"}},
		{"no tensors but data", stFile(`{}`, f32le(1)), ErrIncomplete, []string{"no tensors", "4 trailing"}},
	}
}

// TestOpenRejects opens each crafted bad file and checks the sentinel and
// that the message names the file and what is wrong.
func TestOpenRejects(t *testing.T) {
	for _, c := range badFiles() {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "bad.safetensors", c.data)
			f, err := Open(p)
			if err == nil {
				f.Close()
				t.Fatalf("Open accepted the file")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want errors.Is %v", err, c.want)
			}
			msg := err.Error()
			for _, s := range append([]string{p}, c.frag...) {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q lacks %q", msg, s)
				}
			}
		})
	}
}

// TestSentinelsDistinct checks no two validation rules share a sentinel by
// accident: each sentinel's text is unique.
func TestSentinelsDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range []error{ErrTooShort, ErrHeaderLength, ErrHeaderTooLarge, ErrHeaderJSON, ErrHeaderNotObject,
		ErrTensorEntry, ErrMetadata, ErrDuplicateName, ErrUnknownDType, ErrBadShape, ErrSizeMismatch, ErrBadOffsets,
		ErrOutOfRange, ErrOverlap, ErrHole, ErrIncomplete, ErrNoTensor, ErrRowRange, ErrClosed, ErrIndex,
		ErrShardMissing, ErrShardUnreadable, ErrIndexMismatch, ErrIndexUnlisted, ErrDuplicateTensor, ErrEmptyDir, ErrBadTensor, ErrDiskFull, ErrVerify} {
		if seen[e.Error()] {
			t.Errorf("sentinel text %q used twice", e)
		}
		seen[e.Error()] = true
	}
}

// TestOpenAccepts covers valid edge cases the crate also accepts: no
// tensors, a scalar, a zero-size tensor at a boundary, null metadata,
// unknown extra fields, and entries listed out of offset order.
func TestOpenAccepts(t *testing.T) {
	cases := []struct {
		name   string
		data   []byte
		names  []string
		shapes [][]int
	}{
		{"empty", stFile(`{}`, nil), nil, nil},
		{"empty padded", stFile(`{}      `, nil), nil, nil},
		{"scalar", stFile(`{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, f32le(7)), []string{"s"}, [][]int{{}}},
		{"zero size at boundary", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"BF16","shape":[0,5],"data_offsets":[4,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32le(1, 2)),
			[]string{"a", "z", "b"}, [][]int{{1}, {0, 5}, {1}}},
		{"null metadata, extra field", stFile(`{"__metadata__":null,"w":{"dtype":"I8","shape":[2],"data_offsets":[0,2],"extra":true}}`, []byte{1, 2}), []string{"w"}, [][]int{{2}}},
		{"out of order", stFile(`{"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1, 2}), []string{"a", "b"}, [][]int{{1}, {1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(writeTemp(t, "ok.safetensors", c.data))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got := f.Names()
			if strings.Join(got, ",") != strings.Join(c.names, ",") {
				t.Fatalf("Names = %q, want %q", got, c.names)
			}
			for i, n := range c.names {
				ti, ok := f.Info(n)
				if !ok || !slices.Equal(ti.Shape, c.shapes[i]) {
					t.Errorf("Info(%q) = %+v, %v; want shape %v", n, ti, ok, c.shapes[i])
				}
			}
		})
	}
}
