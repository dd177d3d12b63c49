package safetensors

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// pythonSmall is the file the Python library writes for
// save_file({"a": torch.tensor([1.0, 2.0])}), derived by hand from the
// format: the compact header {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}
// is 54 bytes, padded with 2 spaces to 56 (a multiple of 8); the length
// prefix is 56 as a little-endian u64; the data is 1.0 = 0x3f800000 and
// 2.0 = 0x40000000, little-endian.
var pythonSmall = append(append([]byte{56, 0, 0, 0, 0, 0, 0, 0},
	`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  `...),
	0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40)

// crateSerialization is the byte array the Rust crate's own test
// (safetensors/src/tensor.rs, test_serialization) asserts for a F32 tensor
// "attn.0" of shape [1, 2, 3] holding 0..5: a 64-byte header (no padding
// needed) and 24 bytes of data.
var crateSerialization = []byte{
	64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
	116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
	58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
	101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
	0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
}

func TestReadPythonFile(t *testing.T) {
	if len(pythonSmall) != 8+56+8 {
		t.Fatalf("fixture is %d bytes, want 72", len(pythonSmall))
	}
	f, err := Open(writeTemp(t, "model.safetensors", pythonSmall))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Info("a")
	if !ok || ti.DType != tensor.F32 || !slices.Equal(ti.Shape, []int{2}) || ti.Begin != 0 || ti.End != 8 || ti.Offset != 64 {
		t.Fatalf("Info(a) = %+v, %v", ti, ok)
	}
	a, err := f.Tensor("a")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.F32(); !slices.Equal(got, []float32{1, 2}) {
		t.Errorf("a = %v, want [1 2]", got)
	}
	if &a.Data[0] != &f.data[64] {
		t.Errorf("aligned tensor was copied, want a view of the mapping")
	}
	if f.Metadata() != nil {
		t.Errorf("Metadata = %v, want nil", f.Metadata())
	}
}

// TestWriteMatchesReference checks Write is byte-identical to the Python
// library (hand-derived) and to the Rust crate's asserted serialization.
func TestWriteMatchesReference(t *testing.T) {
	cases := []struct {
		name string
		in   []Named
		want []byte
	}{
		{"python small", []Named{{"a", tensor.FromF32([]float32{1, 2}, 2)}}, pythonSmall},
		{"crate test_serialization", []Named{{"attn.0", tensor.FromF32([]float32{0, 1, 2, 3, 4, 5}, 1, 2, 3)}}, crateSerialization},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := Write(&b, c.in, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), c.want) {
			t.Errorf("%s: wrote\n%q\nwant\n%q", c.name, b.Bytes(), c.want)
		}
	}
}

// TestMetadataRoundTrip: metadata goes first in the header (as serde writes
// the Metadata struct) and HTML characters are written raw, as serde_json
// does. The header below is derived by hand from those rules.
func TestMetadataRoundTrip(t *testing.T) {
	var b bytes.Buffer
	meta := map[string]string{"format": "pt", "note": "<a&b>"}
	if err := Write(&b, []Named{{"x", tensor.FromI64([]int64{-3}, 1)}}, meta); err != nil {
		t.Fatal(err)
	}
	wantHdr := `{"__metadata__":{"format":"pt","note":"<a&b>"},"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`
	got := string(b.Bytes()[8:])
	if !strings.HasPrefix(got, wantHdr) {
		t.Fatalf("header %q, want prefix %q", got, wantHdr)
	}
	f, err := Open(writeTemp(t, "m.safetensors", b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := f.Metadata()
	if len(m) != 2 || m["format"] != "pt" || m["note"] != "<a&b>" {
		t.Errorf("Metadata = %v", m)
	}
	m["format"] = "changed"
	if f.Metadata()["format"] != "pt" {
		t.Errorf("Metadata returned the file's own map")
	}
	x, _ := f.Tensor("x")
	if x.Int(0) != -3 {
		t.Errorf("x = %d, want -3", x.Int(0))
	}
}

// TestRoundTripEveryDType writes a [2, 3] tensor of each dtype, largest
// elements first so every one lands aligned, and checks dtype, shape,
// bytes and that each comes back as a view of the mapping.
func TestRoundTripEveryDType(t *testing.T) {
	var in []Named
	for d := tensor.DType(1); d.Size() != 0; d++ {
		x := tensor.New(d, 2, 3)
		for i := range x.Data {
			x.Data[i] = byte(i*37 + int(d)*11) // arbitrary, distinct per dtype
			if d == tensor.Bool {
				x.Data[i] &= 1
			}
		}
		in = append(in, Named{"t." + d.String(), x})
	}
	slices.SortStableFunc(in, func(a, b Named) int { return b.T.DType.Size() - a.T.DType.Size() })
	p := writeTemp(t, "all.safetensors", nil)
	if err := WriteFile(p, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.Names()) != len(in) {
		t.Fatalf("%d tensors, want %d", len(f.Names()), len(in))
	}
	for i, n := range in {
		if f.Names()[i] != n.Name {
			t.Errorf("Names()[%d] = %q, want %q (write order)", i, f.Names()[i], n.Name)
		}
		got, err := f.Tensor(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := f.Info(n.Name)
		if got.DType != n.T.DType || !slices.Equal(got.Shape, []int{2, 3}) || !bytes.Equal(got.Data, n.T.Data) {
			t.Errorf("%s: got %s %v % x, want %s [2 3] % x", n.Name, got.DType, got.Shape, got.Data, n.T.DType, n.T.Data)
		}
		if &got.Data[0] != &f.data[ti.Offset] {
			t.Errorf("%s: copied, want a view of the mapping", n.Name)
		}
	}
}

// TestMisalignedCopies: a F32 tensor after one U8 byte starts at an odd
// offset, so Tensor must return an aligned copy holding the same values.
func TestMisalignedCopies(t *testing.T) {
	hdr := `{"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}`
	for (8+len(hdr)+1)%4 == 0 { // make f's file offset not a multiple of 4
		hdr += " "
	}
	f, err := Open(writeTemp(t, "odd.safetensors", stFile(hdr, append([]byte{9}, f32le(1.5, -2)...))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x, err := f.Tensor("f")
	if err != nil {
		t.Fatal(err)
	}
	if !x.Aligned() || !slices.Equal(x.F32(), []float32{1.5, -2}) {
		t.Errorf("f = %v (aligned %v), want [1.5 -2]", x.Data, x.Aligned())
	}
	ti, _ := f.Info("f")
	if &x.Data[0] == &f.data[ti.Offset] {
		t.Errorf("misaligned tensor was not copied")
	}
}

// TestRowsViewAndBytesRead reads rows of a [4, 3] F32 weight holding 0..11
// and a whole [3] bias, and checks values and BytesRead by hand: bias 3×4 =
// 12 bytes, rows [1, 3) are 2 rows × 3 × 4 = 24 bytes, 36 in all.
func TestRowsViewAndBytesRead(t *testing.T) {
	w := make([]float32, 12)
	for i := range w {
		w[i] = float32(i)
	}
	var b bytes.Buffer
	err := Write(&b, []Named{
		{"w", tensor.FromF32(w, 4, 3)},
		{"bias", tensor.FromF32([]float32{7, 8, 9}, 3)},
		{"e", tensor.New(tensor.BF16, 2, 2)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(writeTemp(t, "w.safetensors", b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.BytesRead() != 0 {
		t.Fatalf("BytesRead = %d before any read", f.BytesRead())
	}
	if _, err := f.Tensor("bias"); err != nil {
		t.Fatal(err)
	}
	r, err := f.RowsView("w", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Shape, []int{2, 3}) || !slices.Equal(r.F32(), []float32{3, 4, 5, 6, 7, 8}) {
		t.Errorf("rows [1,3) = %v %v, want [2 3] [3 4 5 6 7 8]", r.Shape, r.F32())
	}
	ti, _ := f.Info("w")
	if &r.Data[0] != &f.data[ti.Offset+12] {
		t.Errorf("RowsView copied, want a view at offset %d", ti.Offset+12)
	}
	if got := f.BytesRead(); got != 36 {
		t.Errorf("BytesRead = %d, want 36", got)
	}
	empty, err := f.RowsView("w", 2, 2)
	if err != nil || len(empty.Data) != 0 || !slices.Equal(empty.Shape, []int{0, 3}) {
		t.Errorf("RowsView(2,2) = %v, %v", empty, err)
	}
	for _, ab := range [][2]int{{3, 2}, {0, 5}, {-1, 1}} {
		_, err := f.RowsView("w", ab[0], ab[1])
		if !errors.Is(err, ErrRowRange) || !strings.Contains(err.Error(), `"w"`) || !strings.Contains(err.Error(), f.Path()) {
			t.Errorf("RowsView(w, %d, %d) err = %v, want ErrRowRange naming file and tensor", ab[0], ab[1], err)
		}
	}
	if f.BytesRead() != 36 {
		t.Errorf("failed reads changed BytesRead to %d", f.BytesRead())
	}
}

func TestRowsViewScalar(t *testing.T) {
	f, err := Open(writeTemp(t, "s.safetensors", stFile(`{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, f32le(1))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.RowsView("s", 0, 1); !errors.Is(err, ErrRowRange) {
		t.Errorf("RowsView of a scalar: err = %v, want ErrRowRange", err)
	}
}

func TestNoTensorNamesClosest(t *testing.T) {
	var b bytes.Buffer
	one := tensor.FromF32([]float32{1}, 1)
	Write(&b, []Named{{"model.layers.0.mlp.weight", one}, {"model.layers.1.mlp.weight", one}, {"lm_head.weight", one}}, nil)
	f, err := Open(writeTemp(t, "n.safetensors", b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Tensor("model.layers.1.mlp.weights")
	if !errors.Is(err, ErrNoTensor) {
		t.Fatalf("err = %v, want ErrNoTensor", err)
	}
	msg := err.Error()
	for _, s := range []string{f.Path(), `"model.layers.1.mlp.weights"`, `closest: "model.layers.1.mlp.weight"`} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	if _, ok := f.Info("nope"); ok {
		t.Errorf("Info(nope) reported present")
	}
}

// TestNoTensorClosestIgnoresCase: the hint ranks names as the debugger's
// did-you-mean does (suggest.Nearest: case is no distance, two swapped
// letters count 1): for LM_HEAD.weight, lm_head.weight (0) comes before
// LM_HEAD.weigh (1 dropped), where this package's own Levenshtein, case
// counted, put LM_HEAD.weigh (1) before lm_head.weight (7).
func TestNoTensorClosestIgnoresCase(t *testing.T) {
	var b bytes.Buffer
	one := tensor.FromF32([]float32{1}, 1)
	Write(&b, []Named{{"LM_HEAD.weigh", one}, {"lm_head.weight", one}, {"model.norm.weight", one}}, nil)
	f, err := Open(writeTemp(t, "c.safetensors", b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Tensor("LM_HEAD.weight")
	if want := `(closest: "lm_head.weight", "LM_HEAD.weigh", "model.norm.weight")`; !errors.Is(err, ErrNoTensor) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v; want ErrNoTensor ending %s", err, want)
	}
}

func TestClosed(t *testing.T) {
	f, err := Open(writeTemp(t, "c.safetensors", pythonSmall))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := f.Tensor("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Tensor after Close: err = %v, want ErrClosed", err)
	}
}

func TestOpenNotRegular(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open(dir) = %v, want an error naming it", err)
	}
	if _, err := Open(dir + "/missing.safetensors"); err == nil || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("Open(missing) = %v", err)
	}
}

// TestFromBytes: an in-memory file validates like a mapped one, and a bad
// one fails with the same sentinel.
func TestFromBytes(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []Named{{Name: "w", T: tensor.FromF32([]float32{1, 2, 3}, 3)}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := FromBytes("embedded", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Tensor("w")
	if err != nil || w.ToF32()[2] != 3 {
		t.Fatalf("w = %v, %v", w, err)
	}
	if _, err := FromBytes("embedded", buf.Bytes()[:12]); !errors.Is(err, ErrHeaderLength) {
		t.Fatalf("truncated: %v", err)
	}
}
