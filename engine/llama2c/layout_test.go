package llama2c

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestSourceMatchesRead: the Source of stories260K (its header alone)
// names the tensors Read makes, in Read's order, with their shapes and
// float32, and its Tensor reads each one's values bit for bit as Read
// converts them (Read's conversion is checked against run.c's greedy
// output in the engine's tests). Header.Tensors lists the same.
func TestSourceMatchesRead(t *testing.T) {
	ck, err := Read(stories)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSource(stories)
	if err != nil {
		t.Fatal(err)
	}
	if s.Header != ck.Header {
		t.Fatalf("header %+v, Read's %+v", s.Header, ck.Header)
	}
	if !slices.Equal(s.Names(), ck.Order) {
		t.Fatalf("names %v, Read's order %v", s.Names(), ck.Order)
	}
	infos := s.Header.Tensors()
	if len(infos) != len(ck.Order) {
		t.Fatalf("Header.Tensors lists %d, Read made %d", len(infos), len(ck.Order))
	}
	for i, name := range ck.Order {
		want := ck.Tensors[name]
		dt, shape, ok := s.Meta(name)
		if !ok || dt != tensor.F32 || !slices.Equal(shape, want.Shape) {
			t.Errorf("%s: Meta %v %v %v, Read's f32 %v", name, dt, shape, ok, want.Shape)
		}
		if infos[i].Name != name || !slices.Equal(infos[i].Shape, want.Shape) {
			t.Errorf("Header.Tensors[%d] = %s %v, Read's %s %v", i, infos[i].Name, infos[i].Shape, name, want.Shape)
		}
		got, err := s.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		g, w := got.F32(), want.F32()
		if len(g) != len(w) || len(w) == 0 {
			t.Fatalf("%s: %d values, Read's %d", name, len(g), len(w))
		}
		for j := range w {
			if math.Float32bits(g[j]) != math.Float32bits(w[j]) {
				t.Fatalf("%s[%d] = %v, Read's %v", name, j, g[j], w[j])
			}
		}
	}
	if _, _, ok := s.Meta("lm_head.weight"); ok {
		t.Error("Meta lists lm_head.weight of a checkpoint whose classifier is the embedding")
	}
	if _, err := s.Tensor("lm_head.weight"); err == nil || !strings.Contains(err.Error(), stories) {
		t.Errorf("Tensor(lm_head.weight) = %v, want an error naming %s", err, stories)
	}
}

// TestSourceFileChanged: a file cut after its header was checked is named
// with the tensor asked for, not read past its end.
func TestSourceFileChanged(t *testing.T) {
	data, err := os.ReadFile(stories)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSource(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, int64(len(data)/2)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Tensor("model.norm.weight")
	if err == nil || !strings.Contains(err.Error(), "model.norm.weight") || !strings.Contains(err.Error(), p) {
		t.Errorf("Tensor after the file was cut = %v, want an error naming the tensor and %s", err, p)
	}
}
