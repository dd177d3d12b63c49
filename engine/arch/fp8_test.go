package arch

import (
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestDequantFP8Block: a 3×5 fp8 weight with 2×2 blocks (scale grid 2×3,
// the last block row and column partial). fp8 e4m3 bytes decoded by hand:
// 0x38 = 1.0 (exponent 7, bias 7), 0x40 = 2.0, 0x30 = 0.5, 0x3c = 1.5,
// 0xb8 = -1.0, 0x00 = 0.
func TestDequantFP8Block(t *testing.T) {
	w := &tensor.Tensor{DType: tensor.F8E4M3, Shape: []int{3, 5}, Data: []byte{
		0x38, 0x40, 0x30, 0x3c, 0xb8,
		0x00, 0x38, 0x38, 0x40, 0x30,
		0xb8, 0x3c, 0x40, 0x00, 0x38,
	}}
	s := tensor.FromF32([]float32{1, 2, 4, 0.5, 3, 10}, 2, 3)
	want := []float32{
		1 * 1, 2 * 1, 0.5 * 2, 1.5 * 2, -1 * 4,
		0 * 1, 1 * 1, 1 * 2, 2 * 2, 0.5 * 4,
		-1 * 0.5, 1.5 * 0.5, 2 * 3, 0 * 3, 1 * 10,
	}
	got, err := dequantFP8Block(w, s, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.DType != tensor.F32 || !slices.Equal(got.Shape, []int{3, 5}) {
		t.Fatalf("got %s %v", got.DType, got.Shape)
	}
	for i, v := range got.F32() {
		if v != want[i] {
			t.Fatalf("element %d: %v, want %v (all %v)", i, v, want[i], got.F32())
		}
	}
	// A scale grid of the wrong shape is refused with both shapes.
	_, err = dequantFP8Block(w, tensor.FromF32(make([]float32, 4), 2, 2), 2, 2)
	if err == nil || !strings.Contains(err.Error(), "scale shape [2, 2] for weight [3, 5]") || !strings.Contains(err.Error(), "want [2, 3]") {
		t.Errorf("err = %v", err)
	}
}

// TestDequantFP8BlockBatched: a fused [2, 1, 3] weight (two experts) with 1×2
// blocks uses each expert's own scales: expert 0 scales [1, 2], expert 1
// [3, 4].
func TestDequantFP8BlockBatched(t *testing.T) {
	w := &tensor.Tensor{DType: tensor.F8E4M3, Shape: []int{2, 1, 3}, Data: []byte{0x38, 0x38, 0x38, 0x40, 0x40, 0x40}}
	s := tensor.FromF32([]float32{1, 2, 3, 4}, 2, 1, 2)
	got, err := dequantFP8Block(w, s, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 1, 2, 6, 6, 8}
	for i, v := range got.F32() {
		if v != want[i] {
			t.Fatalf("got %v, want %v", got.F32(), want)
		}
	}
}
