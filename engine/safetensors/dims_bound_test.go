package safetensors

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// onesShape returns a JSON array of n ones: a shape of n dimensions whose
// product is 1.
func onesShape(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]"
}

// TestShapeDimsBounded: a 60 MB header whose shape listed 30 million
// dimensions of 1 (product 1, so every other check passed) took 2.7 GB and
// 35 s to open; a shape of more than 64 dimensions is now refused,
// naming the tensor, before its elements are decoded. 64 itself is
// accepted, and an over-long data_offsets is refused likewise.
func TestShapeDimsBounded(t *testing.T) {
	ok := stFile(`{"a":{"dtype":"F32","shape":`+onesShape(64)+`,"data_offsets":[0,4]}}`, f32le(1))
	if f, err := FromBytes("ok.safetensors", ok); err != nil {
		t.Fatalf("%d dims refused: %v", 64, err)
	} else if ti, _ := f.Info("a"); len(ti.Shape) != 64 {
		t.Fatalf("%d dims read as %d", 64, len(ti.Shape))
	}

	bad := stFile(`{"a":{"dtype":"F32","shape":`+onesShape(64+1)+`,"data_offsets":[0,4]}}`, f32le(1))
	_, err := FromBytes("deep.safetensors", bad)
	if !errors.Is(err, ErrTensorEntry) || !strings.Contains(err.Error(), `deep.safetensors: tensor "a"`) ||
		!strings.Contains(err.Error(), "shape has more than 64 elements") {
		t.Fatalf("%d dims: %v, want ErrTensorEntry naming the file, tensor \"a\" and the 64-dimension bound", 64+1, err)
	}

	offs := stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":`+onesShape(1_000_000)+`}}`, f32le(1))
	if _, err := FromBytes("offs.safetensors", offs); !errors.Is(err, ErrTensorEntry) || !strings.Contains(err.Error(), "data_offsets has more than 64 elements") {
		t.Fatalf("a million data_offsets: %v", err)
	}

	// A million dimensions (2 MB of header): refused with little memory.
	// Decoding them all took 24 MB of element slices, 16 MB of integers
	// and 8 MB of shape.
	huge := stFile(`{"a":{"dtype":"F32","shape":`+onesShape(1_000_000)+`,"data_offsets":[0,4]}}`, f32le(1))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = FromBytes("huge.safetensors", huge)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTensorEntry) {
		t.Fatalf("a million dims: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("refusing a million dims allocated %d bytes, want under 4 MiB", got)
	}
}
