package capture

import (
	"errors"
	"fmt"
	"hsdb/engine/enginetest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"hsdb/engine"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// captureAndDump runs seqs through e with layers captured and dumps them.
func captureAndDump(t *testing.T, e *engine.Engine, seqs [][]int32, layers []int, what, dir string) ([]*SeqCapture, *Manifest) {
	t.Helper()
	c := NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers(layers, what); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prefill(seqs, c, false); err != nil {
		t.Fatal(err)
	}
	got, reps, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Dump(dir, got, reps, DumpInfo{Model: infoOf(e), Layers: layers, What: what}, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got, m
}

// readDumpSeq opens sequence i of a dump.
func readDumpSeq(t *testing.T, dir string, m *Manifest, i int) *safetensors.File {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, m.Sequences[i].File))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestDumpRoundTripHF: capture the stream of every layer of testdata/hf/llama
// at tp 1 and 2 for the fixture's three sequences, dump, re-read: each file
// holds input_ids and hidden_states.{i} equal (bit for bit) to what was
// captured, and hidden_states.i equals HF transformers' output_hidden_states
// [i+1] for the sequence's rows within 1e-5 of max|x| (layer 2, the last,
// against HF's hooked layer output: HF's last hidden_states entry is post
// final norm). At tp 2 the manifest records the cross-rank check
// (inspect/check's TestDumpPassesCheck checks such a dump).
func TestDumpRoundTripHF(t *testing.T) {
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	seqs := enginetest.HFSeqs(t, ref)
	var starts []int // each sequence's first row in the reference
	off := 0
	for _, s := range seqs {
		starts = append(starts, off)
		off += len(s)
	}
	for _, tp := range []int{1, 2} {
		t.Run(fmt.Sprintf("tp%d", tp), func(t *testing.T) {
			e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: tp})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			dir := filepath.Join(t.TempDir(), "dump")
			captured, m := captureAndDump(t, e, seqs, []int{0, 1, 2}, WhatStream, dir)
			if !m.Complete || len(m.Sequences) != 3 || m.Model.WorldSize != tp {
				t.Fatalf("manifest: complete %v, %d sequences, world %d", m.Complete, len(m.Sequences), m.Model.WorldSize)
			}
			if tp == 2 && (len(m.Replicas) != 3 || !m.Replicas["hidden_states.1"].OK || m.Replicas["hidden_states.1"].Ranks != 2) {
				t.Fatalf("replicas %+v", m.Replicas)
			}
			if !hfIndexIs(m.Capture.HFIndex, "hidden_states.0", 1) || !hfIndexNull(m.Capture.HFIndex, "hidden_states.2") {
				t.Fatalf("hf index %v", m.Capture.HFIndex)
			}
			for s := range seqs {
				f := readDumpSeq(t, dir, m, s)
				ids, _ := f.Tensor("input_ids")
				for j, id := range seqs[s] {
					if ids.Int(j) != int64(id) {
						t.Fatalf("seq %d input_ids[%d] = %d, want %d", s, j, ids.Int(j), id)
					}
				}
				for _, l := range []int{0, 1, 2} {
					key := fmt.Sprintf("hidden_states.%d", l)
					got, err := f.Tensor(key)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got.F32(), captured[s].Tensors[key].F32()) {
						t.Fatalf("seq %d %s re-read differs from the captured values", s, key)
					}
					hfName := fmt.Sprintf("hf_hidden_states.%d", l+1)
					if l == 2 {
						hfName = "layer.2"
					}
					want, _ := ref.RowsView(hfName, starts[s], starts[s]+len(seqs[s]))
					if err := enginetest.CheckClose(got.F32(), want.ToF32(), 1e-5); err != nil {
						t.Errorf("seq %d %s vs HF %s: %v of max|x|", s, key, hfName, err)
					}
				}
			}
		})
	}
}

// TestDumpRoundTripEmbedded: on the embedded stories260K, capture stream of
// layers 1 and 3 and hidden_states of layer 4 (as a site capture), dump in
// bf16 and f32: re-read values equal the captured ones rounded to the dump
// dtype (round to nearest even), and tp 2 captures the same values as tp 1
// within 1e-5 (the engine's own tp test bound, engine/engine_test.go).
func TestDumpRoundTripEmbedded(t *testing.T) {
	seqs := [][]int32{{1, 403, 407, 261, 378}, {1, 64}}
	var base []*SeqCapture
	for _, tp := range []int{1, 2} {
		e, err := engine.Open("", engine.Options{TP: tp})
		if err != nil {
			t.Fatal(err)
		}
		c := NewCapturer(e.Tree, e.Dims.Layers)
		if err := c.AddLayers([]int{1, 3}, ""); err != nil {
			t.Fatal(err)
		}
		if err := c.AddSite("layers.4", "hidden_states"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Prefill(seqs, c, false); err != nil {
			t.Fatal(err)
		}
		got, reps, err := c.Result()
		if err != nil {
			t.Fatal(err)
		}
		info := DumpInfo{Model: infoOf(e), Layers: c.Layers(), What: c.What(), Sites: []SiteInfo{{Site: "model.layers.4", Tensor: "hidden_states", Key: "model.layers.4:hidden_states"}}}
		for _, dt := range []tensor.DType{tensor.F32, tensor.BF16} {
			dir := filepath.Join(t.TempDir(), "d")
			m, err := Dump(dir, got, reps, info, DumpOptions{DType: dt})
			if err != nil {
				t.Fatal(err)
			}
			for s := range seqs {
				f := readDumpSeq(t, dir, m, s)
				for _, k := range []string{"hidden_states.1", "hidden_states.3", "model.layers.4:hidden_states"} {
					x, err := f.Tensor(k)
					if err != nil {
						t.Fatal(err)
					}
					if x.DType != dt || !slices.Equal(x.Shape, []int{len(seqs[s]), 64}) {
						t.Fatalf("%s: %s %v", k, x.DType, x.Shape)
					}
					want := got[s].Tensors[k].F32()
					for i, v := range x.ToF32() {
						w := want[i]
						if dt == tensor.BF16 {
							w = tensor.BF16ToF32(tensor.F32ToBF16(w))
						}
						if v != w {
							t.Fatalf("tp %d %s %s[%d] = %g, captured %g", tp, dt, k, i, v, w)
						}
					}
				}
			}
		}
		if tp == 1 {
			base = got
			continue
		}
		for s := range seqs {
			for k, v := range got[s].Tensors {
				if err := enginetest.CheckClose(v.F32(), base[s].Tensors[k].F32(), 1e-5); err != nil {
					t.Errorf("seq %d %s: tp 2 vs tp 1 %v", s, k, err)
				}
			}
		}
	}
}

// TestDumpRefusesExisting: an existing directory is never overwritten
// without Force; with Force, one hsdb did not write is refused untouched
// and a dump hsdb wrote is replaced.
func TestDumpRefusesExisting(t *testing.T) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	c.AddLayers([]int{0}, WhatStream)
	if _, err := e.Prefill([][]int32{{1, 2, 3}}, c, false); err != nil {
		t.Fatal(err)
	}
	seqs, reps, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	info := DumpInfo{Model: infoOf(e), Layers: []int{0}, What: WhatStream}
	if _, err := Dump(dir, seqs, reps, info, DumpOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "mine" {
		t.Fatal("the existing directory was touched")
	}
	if _, err := Dump(dir, seqs, reps, info, DumpOptions{Force: true}); !errors.Is(err, ErrNotDump) {
		t.Fatalf("--force over a directory hsdb did not write: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "mine" {
		t.Fatal("--force touched a directory hsdb did not write")
	}
	os.RemoveAll(dir)
	if _, err := Dump(dir, seqs, reps, info, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	old, _ := ReadManifest(dir)
	if _, err := Dump(dir, seqs, reps, info, DumpOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadManifest(dir); err != nil || !m.Complete || m.Created < old.Created {
		t.Fatalf("%v %+v", err, m)
	}
	assertNoLeftovers(t, filepath.Dir(dir), "d")
}

// assertNoLeftovers: the parent holds only the named entries (no staging
// or temporary directories).
func assertNoLeftovers(t *testing.T, parent string, want ...string) {
	t.Helper()
	ents, _ := os.ReadDir(parent)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("%s holds %v, want %v", parent, names, want)
	}
}

// TestDumpFailureLeavesNothing: a disk-full error while writing the second
// sequence (injected) and a sequence with NaN both leave no dump and no
// staging directory, with an error saying what happened.
func TestDumpFailureLeavesNothing(t *testing.T) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	c.AddLayers([]int{0, 2}, WhatStream)
	if _, err := e.Prefill([][]int32{{1, 2, 3}, {1, 5}}, c, false); err != nil {
		t.Fatal(err)
	}
	seqs, reps, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	info := DumpInfo{Model: infoOf(e), Layers: []int{0, 2}, What: WhatStream}
	parent := t.TempDir()
	dir := filepath.Join(parent, "d")
	n := 0
	dumpTestHook = func(p string) error {
		if n++; n == 2 {
			return &os.PathError{Op: "write", Path: p, Err: syscall.ENOSPC}
		}
		return nil
	}
	_, err = Dump(dir, seqs, reps, info, DumpOptions{})
	dumpTestHook = nil
	if !errors.Is(err, safetensors.ErrDiskFull) || !strings.Contains(err.Error(), "seq_000001.safetensors") {
		t.Fatalf("err = %v", err)
	}
	assertNoLeftovers(t, parent)
	seqs[1].Tensors["hidden_states.2"].F32()[3] = float32(math.NaN())
	_, err = Dump(dir, seqs, reps, info, DumpOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "hidden_states.2 has 1 NaN") {
		t.Fatalf("err = %v", err)
	}
	assertNoLeftovers(t, parent)
}

// TestCapturerErrors: bad requests are refused with what the model has.
func TestCapturerErrors(t *testing.T) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{c.AddLayers([]int{5}, ""), "layer 5: the model has layers 0..4"},
		{c.AddLayers([]int{1}, "normed"), `--what "normed"`},
		{c.AddSite("layers.1.mlp", "nope"), "shows input, output"},
		{c.AddSite("layers.9", "stream"), `no site "layers.9"`},
	} {
		if !errors.Is(tc.err, ErrCapture) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", tc.err, tc.want)
		}
	}
	if err := c.AddLayers([]int{1}, WhatResidual); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLayers([]int{2}, WhatStream); !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "already captured as residual") {
		t.Fatalf("err = %v", err)
	}
	if err := c.AddLayers([]int{1}, WhatResidual); !errors.Is(err, ErrCapture) {
		t.Fatalf("err = %v", err)
	}
	c.Clear()
	if len(c.List()) != 0 {
		t.Fatal("clear")
	}
}

// TestCapturerDecodeAppends: a prefill then two decode steps give each
// sequence its prompt plus the decoded tokens, and rows equal to those of
// one prefill of the whole sequence (the engine's decode/prefill
// agreement, engine/engine_test.go, within 1e-5).
func TestCapturerDecodeAppends(t *testing.T) {
	e, err := engine.Open("", engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCapturer(e.Tree, e.Dims.Layers)
	c.AddLayers([]int{3}, WhatStream)
	if _, err := e.Prefill([][]int32{{1, 400, 281}, {1, 64}}, c, false); err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]int32{{350, 7}, {305, 9}} {
		if _, err := e.Decode(ids, c); err != nil {
			t.Fatal(err)
		}
	}
	got, _, _ := c.Result()
	full := NewCapturer(e.Tree, e.Dims.Layers)
	full.AddLayers([]int{3}, WhatStream)
	if _, err := e.Prefill([][]int32{{1, 400, 281, 350, 305}, {1, 64, 7, 9}}, full, false); err != nil {
		t.Fatal(err)
	}
	want, _, _ := full.Result()
	for s := range got {
		if fmt.Sprint(got[s].IDs) != fmt.Sprint(want[s].IDs) {
			t.Fatalf("seq %d ids %v, want %v", s, got[s].IDs, want[s].IDs)
		}
		if err := enginetest.CheckClose(got[s].Tensors["hidden_states.3"].F32(), want[s].Tensors["hidden_states.3"].F32(), 1e-5); err != nil {
			t.Errorf("seq %d: decode rows vs prefill %v", s, err)
		}
	}
}
