package capture

import (
	"archive/zip"
	"bytes"
	"io"
	"slices"
	"testing"

	"hsdb/engine/tensor"
)

// TestTorchPickleBytes compares data.pkl for {"x": LongTensor [2]} with the
// opcodes written out by hand from torch.save's pickling of a tensor
// (torch/_tensor.py __reduce_ex__ -> torch._utils._rebuild_tensor_v2 with
// a persistent storage id, torch/serialization.py persistent_id), protocol 2.
func TestTorchPickleBytes(t *testing.T) {
	got, err := TorchPickle([]TorchEntry{{Key: "x", T: tensor.FromI64([]int64{5, 6}, 2)}})
	if err != nil {
		t.Fatal(err)
	}
	want := "\x80\x02" + // PROTO 2
		"}(" + // EMPTY_DICT, MARK
		"X\x01\x00\x00\x00x" + // key "x"
		"ctorch._utils\n_rebuild_tensor_v2\n" +
		"(" + // MARK: arguments
		"(X\x07\x00\x00\x00storage" + "ctorch\nLongStorage\n" + "X\x01\x00\x00\x000" + "X\x03\x00\x00\x00cpu" + "K\x02" + "tQ" + // ('storage', LongStorage, '0', 'cpu', 2) BINPERSID
		"K\x00" + // storage_offset 0
		"(K\x02t" + // size (2,)
		"(K\x01t" + // stride (1,)
		"\x89" + // requires_grad False
		"ccollections\nOrderedDict\n)R" + // OrderedDict()
		"tR" + // TUPLE, REDUCE
		"u." // SETITEMS, STOP
	if string(got) != want {
		t.Errorf("data.pkl\n got %q\nwant %q", got, want)
	}
}

// TestWriteTorchSaveLayout checks the archive against torch.save's layout
// (caffe2/serialize/inline_container.cc): the records and their order,
// every record stored uncompressed with its data at a multiple of 64 bytes
// from the start of the file, the constant records' contents, and each
// data/N equal to its tensor's bytes.
func TestWriteTorchSaveLayout(t *testing.T) {
	ids := tensor.FromI64([]int64{1, 2, 3}, 3)
	h := tensor.FromF32([]float32{0.5, -1, 2, 3.25, 4, 5}, 1, 3, 2).Convert(tensor.BF16)
	var buf bytes.Buffer
	if err := WriteTorchSave(&buf, "archive", []TorchEntry{{"input_ids", ids}, {"hidden_state", h}}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	recs := map[string][]byte{}
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want stored (0)", f.Name, f.Method)
		}
		off, err := f.DataOffset()
		if err != nil || off%64 != 0 {
			t.Errorf("%s: data at offset %d (%v), want a multiple of 64", f.Name, off, err)
		}
		r, _ := f.Open()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		recs[f.Name] = b
	}
	wantNames := []string{"archive/data.pkl", "archive/.format_version", "archive/.storage_alignment", "archive/byteorder", "archive/data/0", "archive/data/1", "archive/version"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("records %q, want %q", names, wantNames)
	}
	for k, v := range map[string]string{"archive/.format_version": "1", "archive/.storage_alignment": "64", "archive/byteorder": "little", "archive/version": "3\n"} {
		if string(recs[k]) != v {
			t.Errorf("%s = %q, want %q", k, recs[k], v)
		}
	}
	// Little-endian int64 1, 2, 3 and the bf16 bits of 0.5, -1, 2, 3.25, 4, 5 (exact in bf16).
	wantIDs := []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}
	wantH := []byte{0x00, 0x3f, 0x80, 0xbf, 0x00, 0x40, 0x50, 0x40, 0x80, 0x40, 0xa0, 0x40}
	if !bytes.Equal(recs["archive/data/0"], wantIDs) || !bytes.Equal(recs["archive/data/1"], wantH) {
		t.Errorf("data/0 % x, data/1 % x; want % x and % x", recs["archive/data/0"], recs["archive/data/1"], wantIDs, wantH)
	}
	if !bytes.Contains(recs["archive/data.pkl"], []byte("ctorch\nBFloat16Storage\n")) || !bytes.Contains(recs["archive/data.pkl"], []byte("(K\x01K\x03K\x02t(K\x06K\x02K\x01t")) {
		t.Errorf("data.pkl lacks BFloat16Storage or hidden_state's size (1, 3, 2) and stride (6, 2, 1): %q", recs["archive/data.pkl"])
	}
}

// TestNonFinite counts NaN and Inf from the bits of bf16, f16 and f32
// tensors holding 1, +Inf, -Inf, NaN, 0 (bit patterns from IEEE 754 and
// bfloat16's definition as the top half of a float32).
func TestNonFinite(t *testing.T) {
	for _, c := range []struct {
		dt   tensor.DType
		bits []byte
	}{
		{tensor.BF16, []byte{0x80, 0x3f, 0x80, 0x7f, 0x80, 0xff, 0xc0, 0x7f, 0, 0}},
		{tensor.F16, []byte{0x00, 0x3c, 0x00, 0x7c, 0x00, 0xfc, 0x00, 0x7e, 0, 0}},
		{tensor.F32, []byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 0, 0, 0xc0, 0x7f, 0, 0, 0, 0}},
	} {
		nan, inf := nonFinite(&tensor.Tensor{Shape: []int{5}, DType: c.dt, Data: c.bits})
		if nan != 1 || inf != 2 {
			t.Errorf("%s: %d NaN, %d Inf; want 1 and 2", c.dt, nan, inf)
		}
	}
}
