package capture

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// manifestOfEntries writes a manifest of one sequence whose tensors hold
// n entries made by entry(i), and returns the file's size.
func manifestOfEntries(t *testing.T, dir string, n int, entry func(i int) string) int {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"format":"` + ManifestFormat + `","model":{"world_size":1},"sequences":[{"id":"a","index":0,"length":3,"file":"seq_000000.safetensors","tensors":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(entry(i))
	}
	b.WriteString(`}}]}`)
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Len()
}

// TestManifestTensorsMemory: a record's tensors entries of a few bytes
// ("0":{}, "1":{}, ...) took 10-14 times their bytes in memory once read
// (a map slot, a key and a record each), so a 2 GiB manifest could hold
// some 28 GB. Such entries are refused now at the first one, naming it,
// and the read allocates no more than the decoder's buffer for the record
// (measured, runtime.MemStats.TotalAlloc): json.Decoder grows its buffer
// to 2·cap+512 bytes when full, so the buffers it allocates for a record
// of B bytes total less than 4·B + a few KiB; 1 MiB is left for the rest
// (the 64 KiB bufio reader, the header).
//
// The smallest entries hsdb writes (a shape, a dtype, a 64-digit sha256:
// `"0":{"shape":[],"dtype":"F32","sha256":"…"}`) are kept, and what they
// hold once read (runtime.MemStats.HeapAlloc after a GC, the manifest
// alive) is bounded per entry by hand: the map slot, the key's string
// header and the TensorRecord (unsafe.Sizeof) plus one control byte, at
// 16/7 slots per entry (Go's maps fill groups to at most 7/8 and double:
// at worst 7/16 full); the key's bytes rounded up to 8; the sha256's 64
// bytes (a size class of its own); nothing for the dtype (the package's
// constant) nor for the empty shape (a zero-size slice). That is some 2.2
// times the entry's bytes in the file.
func TestManifestTensorsMemory(t *testing.T) {
	const n = 50000
	dir := t.TempDir()
	size := manifestOfEntries(t, dir, n, func(i int) string { return fmt.Sprintf(`"%d":{}`, i) })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := ReadManifest(dir)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), `sequences[0]: tensors["0"]: dtype "" is no safetensors dtype`) {
		t.Fatalf("tiny entries: %v, %v; want ErrManifest naming tensors[\"0\"]", m, err)
	}
	t.Logf("refused %d bytes of manifest: %d bytes allocated", size, after.TotalAlloc-before.TotalAlloc)
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(4*size+1<<20); got > bound {
		t.Errorf("refusing a manifest of %d bytes allocated %d bytes, more than %d", size, got, bound)
	}

	sha := strings.Repeat("0123456789abcdef", 4)
	size = manifestOfEntries(t, dir, n, func(i int) string {
		return fmt.Sprintf(`"%d":{"shape":[],"dtype":"F32","sha256":"%s"}`, i, sha)
	})
	slot := float64(unsafe.Sizeof("")+unsafe.Sizeof(TensorRecord{})+1) * 16 / 7
	var bound float64
	for i := range n {
		bound += slot + float64((len(fmt.Sprint(i))+7)/8*8) + 64
	}
	bound += 64 << 10 // the manifest's header, the record and the sequences slice
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err = ReadManifest(dir)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil || len(m.Sequences) != 1 || len(m.Sequences[0].Tensors) != n || m.Sequences[0].Tensors["7"].SHA256 != sha {
		t.Fatalf("valid entries: %v", err)
	}
	held := float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
	if !(held <= bound) {
		t.Errorf("%d entries (%d bytes of manifest) hold %.0f bytes, more than the %.0f derived", n, size, held, bound)
	}
	if r := bound / float64(size); !(r <= 2.5) {
		t.Errorf("the derived bound is %.2f times the file", r)
	}
	t.Logf("%d bytes of manifest: %.0f bytes held (%.2f×; bound %.2f×)", size, held, held/float64(size), bound/float64(size))
	runtime.KeepAlive(m)
}

// TestManifestShapeDims: a tensors entry's shape of a million dims ("0,"
// each: 2 bytes of the file, 8 of memory) was decoded whole, so the entry
// held some 5 times its bytes (a 2 GiB manifest: 10 GB) and its decoding
// allocated some 30 times them. Such a shape is refused at the first dim
// past MaxRecordDims, naming the entry, and the refusal allocates no more
// than the decoder's buffers (4·B + 1 MiB, as TestManifestTensorsMemory
// derives). A shape of MaxRecordDims dims is kept as given; one more is
// refused.
func TestManifestShapeDims(t *testing.T) {
	dir := t.TempDir()
	sha := strings.Repeat("0123456789abcdef", 4)
	entry := func(dims string) func(int) string {
		return func(i int) string {
			return fmt.Sprintf(`"%d":{"shape":[%s],"dtype":"F32","sha256":"%s"}`, i, dims, sha)
		}
	}
	size := manifestOfEntries(t, dir, 1, entry(strings.TrimSuffix(strings.Repeat("0,", 1_000_000), ",")))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := ReadManifest(dir)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), `sequences[0]: tensors["0"]: shape has more than 8 dims`) {
		t.Fatalf("a shape of a million dims: read: %v (manifest read: %v); want ErrManifest naming tensors[\"0\"] and 8 dims", err, m != nil)
	}
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(4*size+1<<20); got > bound {
		t.Errorf("refusing a manifest of %d bytes allocated %d bytes, more than %d", size, got, bound)
	}
	manifestOfEntries(t, dir, 1, entry("1,2,3,4,5,6,7,8"))
	if m, err = ReadManifest(dir); err != nil || !slices.Equal(m.Sequences[0].Tensors["0"].Shape, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("a shape of 8 dims: %v", err)
	}
	manifestOfEntries(t, dir, 1, entry("1,2,3,4,5,6,7,8,9"))
	if _, err = ReadManifest(dir); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "more than 8 dims") {
		t.Fatalf("a shape of 9 dims: %v, want refused", err)
	}
}
