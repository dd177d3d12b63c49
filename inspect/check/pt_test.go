package check

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

const capturesDir = "../../testdata/captures"

// expectedFile is one entry of testdata/captures/EXPECTED.json, written by
// scripts/fixtures/make_capture_fixtures.py from what torch actually saved.
type expectedFile struct {
	Kind           string          `json:"kind"`
	OK             bool            `json:"ok"`
	PickleGlobals  []string        `json:"pickle_globals"`
	ForbiddenGlobs []string        `json:"forbidden_globals"`
	Structure      json.RawMessage `json:"structure"`
	SeqLens        []int           `json:"seq_lens"`
	Layers         []int           `json:"layers"`
}

func loadExpected(t *testing.T) map[string]expectedFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(capturesDir, "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Files map[string]expectedFile `json:"files"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Files
}

// torchDType maps the dtype names EXPECTED.json uses (str(torch.dtype)
// without the prefix) to hsdb's.
var torchDType = map[string]tensor.DType{"float32": tensor.F32, "bfloat16": tensor.BF16, "int64": tensor.I64}

// checkStructure compares a Value tree with EXPECTED's structure: dicts of
// {"dtype", "shape"} leaves, lists of them.
func checkStructure(t *testing.T, file, path string, v *Value, want any) {
	t.Helper()
	switch w := want.(type) {
	case []any:
		if v.Kind != KindList || len(v.Items) != len(w) {
			t.Fatalf("%s %s: kind %d with %d items, want a list of %d", file, path, v.Kind, len(v.Items), len(w))
		}
		for i := range w {
			checkStructure(t, file, path+"[]", v.Items[i], w[i])
		}
	case map[string]any:
		if dt, ok := w["dtype"].(string); ok {
			if v.Kind != KindTensor {
				t.Fatalf("%s %s: not a tensor", file, path)
			}
			var shape []int
			for _, d := range w["shape"].([]any) {
				shape = append(shape, int(d.(float64)))
			}
			if v.Tensor.DType != torchDType[dt] || !slices.Equal(v.Tensor.Shape, shape) {
				t.Fatalf("%s %s: %s %v, want %s %v", file, path, v.Tensor.DType, v.Tensor.Shape, dt, shape)
			}
			return
		}
		if v.Kind != KindDict || len(v.Keys) != len(w) {
			t.Fatalf("%s %s: want a dict of %d keys, got kind %d keys %v", file, path, len(w), v.Kind, v.Keys)
		}
		for k, sub := range w {
			c := v.Get(k)
			if c == nil {
				t.Fatalf("%s: no key %q", file, k)
			}
			checkStructure(t, file, path+"."+k, c, sub)
		}
	}
}

// TestReadTorchFixtures: every .pt fixture reads back with the structure
// torch itself reported (EXPECTED.json "structure", from torch.load in the
// generator), and the opcode scanner finds exactly the globals the
// generator listed (EXPECTED "pickle_globals", sorted).
func TestReadTorchFixtures(t *testing.T) {
	exp := loadExpected(t)
	n := 0
	for name, e := range exp {
		if !strings.HasSuffix(name, ".pt") || e.Kind == "forbidden_global" {
			continue
		}
		n++
		cf, err := ReadTorch(filepath.Join(capturesDir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want any
		if err := json.Unmarshal(e.Structure, &want); err != nil {
			t.Fatal(err)
		}
		checkStructure(t, name, "", cf.Root, want)
		got := append([]string(nil), cf.PickleGlobals...)
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(e.PickleGlobals, " ") {
			t.Errorf("%s: globals %v, EXPECTED (from Python's pickletools) %v", name, got, e.PickleGlobals)
		}
	}
	if n < 9 {
		t.Fatalf("only %d .pt fixtures in EXPECTED.json", n)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestReadTorchViewsOfOneStorage: per_token_rows.pt holds 12 rows that are
// views of one [12, 96] storage at offsets 0, 96, 192, ...; read with their
// storage_offset they equal rows 0..11 of HF's layer-1 output in
// reference.safetensors (llama.layer.1, sequence 0).
func TestReadTorchViewsOfOneStorage(t *testing.T) {
	cf, err := ReadTorch(filepath.Join(capturesDir, "per_token_rows.pt"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.Open(filepath.Join(capturesDir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Tensor("llama.layer.1")
	if err != nil {
		t.Fatal(err)
	}
	w := want.ToF32()
	rows := cf.Root.Get("hidden_states").Items
	if len(rows) != 12 {
		t.Fatalf("%d rows", len(rows))
	}
	for r, it := range rows {
		got := it.Tensor.ToF32()
		for c, v := range got {
			if v != w[r*96+c] {
				t.Fatalf("row %d col %d: %g, reference %g", r, c, v, w[r*96+c])
			}
		}
	}
}

// TestReadTorchRefusesGlobals: the fixture whose pickle names posix.system
// is refused with ErrForbiddenGlobal naming it; so are hand-made pickles
// naming builtins.eval and copy_reg._reconstructor (which gopickle would
// otherwise build itself without asking the allowlist).
func TestReadTorchRefusesGlobals(t *testing.T) {
	_, err := ReadTorch(filepath.Join(capturesDir, "evil_global.pt"))
	if !errors.Is(err, ErrForbiddenGlobal) || !strings.Contains(err.Error(), "posix.system") {
		t.Fatalf("evil_global.pt: %v", err)
	}
	// Protocol 2: GLOBAL 'builtins eval', the string, TUPLE1, REDUCE, STOP.
	evalPkl := "\x80\x02cbuiltins\neval\nX\x04\x00\x00\x00'hi'\x85R."
	// copy_reg._reconstructor(object, object, None): what pickling a plain
	// object with protocol < 2 emits.
	recon := "\x80\x02ccopy_reg\n_reconstructor\nc__builtin__\nobject\nc__builtin__\nobject\nN\x87R."
	for name, pkl := range map[string]string{"builtins.eval": evalPkl, "copy_reg._reconstructor": recon} {
		p := writeTorchZip(t, "x", pkl, nil)
		_, err := ReadTorch(p)
		if !errors.Is(err, ErrForbiddenGlobal) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// writeTorchZip writes a torch.save-like archive: NAME/data.pkl, and
// NAME/data/KEY for each storage.
func writeTorchZip(t *testing.T, name, pkl string, storages map[string][]byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(n string, b []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	add(name+"/data.pkl", []byte(pkl))
	add(name+"/byteorder", []byte("little"))
	for k, b := range storages {
		add(name+"/data/"+k, b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".pt")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadTorchStrides: a hand-written pickle of
// _rebuild_tensor_v2(storage of 6 floats 0..5, offset 1, size (2, 2),
// stride (1, 2)) — a transposed view — reads as [[1, 3], [2, 4]]: element
// (i, j) is storage[1 + i·1 + j·2]. A view reaching past the storage is
// refused.
func TestReadTorchStrides(t *testing.T) {
	st := tensor.FromF32([]float32{0, 1, 2, 3, 4, 5}, 6)
	pkl := func(off, s0, s1 byte) string {
		return "\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" +
			"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQ" +
			"K" + string(off) + "K\x02K\x02\x86K" + string(s0) + "K" + string(s1) + "\x86\x89N" + "tR."
	}
	cf, err := ReadTorch(writeTorchZip(t, "v", pkl(1, 1, 2), map[string][]byte{"0": st.Data}))
	if err != nil {
		t.Fatal(err)
	}
	got := cf.Root.Tensor.ToF32()
	if !slices.Equal(got, []float32{1, 3, 2, 4}) || !slices.Equal(cf.Root.Tensor.Shape, []int{2, 2}) {
		t.Fatalf("got %v %v", cf.Root.Tensor.Shape, got)
	}
	// offset 3, stride (1, 2): reaches storage[3+1+2] = storage[6], past the end.
	_, err = ReadTorch(writeTorchZip(t, "w", pkl(3, 1, 2), map[string][]byte{"0": st.Data}))
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "holds 6 elements") {
		t.Fatalf("out-of-range view: %v", err)
	}
}

// TestReadCaptureFileErrors: garbage, an empty file and a truncated
// archive are ErrUnreadable naming the file, never a panic.
func TestReadCaptureFileErrors(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(capturesDir, "good_speculators.pt"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"garbage.pt":   []byte("hello, world"),
		"empty.pt":     nil,
		"truncated.pt": good[:len(good)/2],
		"badpickle.pt": nil,
	}
	for name, b := range cases {
		p := filepath.Join(dir, name)
		if name == "badpickle.pt" {
			p = writeTorchZip(t, "b", "\x80\x02K", nil) // BININT1 without its byte, no STOP
		} else if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadCaptureFile(p)
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
