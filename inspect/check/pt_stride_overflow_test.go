package check

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestReadTorchStrideOverflow: a view whose size × stride passes the
// largest int (a hostile or corrupt .pt: stride 2^62 or 2^63−1 over a
// 6-element storage) is refused naming the storage; before, (3−1)·2^62
// wrapped to a negative "last element", the view passed the bounds check
// and every element read storage[0] (the address wrapped too: the file
// read as [7, 7, 7], silently), and 2^63−1 panicked inside the copy
// ("malformed pickle: runtime error: slice bounds out of range").
func TestReadTorchStrideOverflow(t *testing.T) {
	st := tensor.FromF32([]float32{7, 1, 2, 3, 4, 5}, 6)
	pkl := func(stride uint64) string {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], stride)
		return "\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" +
			"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQ" +
			"K\x00K\x03\x85\x8a\x08" + string(b[:]) + "\x85\x89N" + "tR."
	}
	for _, stride := range []uint64{1 << 62, 1<<63 - 1, 1<<62 + 1} {
		cf, err := ReadTorch(writeTorchZip(t, "v", pkl(stride), map[string][]byte{"0": st.Data}))
		if err == nil {
			t.Errorf("stride %d: read %v; want the view refused", stride, cf.Root.Tensor.ToF32())
			continue
		}
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "holds 6 elements") || strings.Contains(err.Error(), "runtime error") {
			t.Errorf("stride %d: %v; want ErrUnreadable naming the storage's 6 elements", stride, err)
		}
	}
	// Stride 2 (every other element) still reads: [7, 2, 4].
	cf, err := ReadTorch(writeTorchZip(t, "w", pkl(2), map[string][]byte{"0": st.Data}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Root.Tensor.ToF32(); len(got) != 3 || got[0] != 7 || got[1] != 2 || got[2] != 4 {
		t.Errorf("stride 2: %v, want [7 2 4]", got)
	}
}
