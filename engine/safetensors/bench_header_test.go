package safetensors

import (
	"encoding/binary"
	"strconv"
	"testing"
)

// manyZeroTensors returns a safetensors file, in memory, whose header
// holds n zero-size tensors ("t.0" ... : F32 [0] at [0, 0], 51-60 bytes
// each, as Write lays them out) and a small __metadata__: the shape of the
// hostile header an attacker pass measured (1.5 M entries, 89 MB, under
// MaxHeaderSize).
func manyZeroTensors(n int) []byte {
	hdr := make([]byte, 0, 60*n+64)
	hdr = append(hdr, `{"__metadata__":{"format":"pt"}`...)
	for i := range n {
		hdr = append(hdr, `,"t.`...)
		hdr = strconv.AppendInt(hdr, int64(i), 10)
		hdr = append(hdr, `":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`...)
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	buf := make([]byte, 8, 8+len(hdr))
	binary.LittleEndian.PutUint64(buf, uint64(len(hdr)))
	return append(buf, hdr...)
}

// BenchmarkHeader1_5MZeroTensors parses and validates the header of
// 1.5 million zero-size tensors (FromBytes: parseHeader and the name
// index), reporting the header's bytes per second. It logs the header's
// size; `go test -run '^$' -bench Header1_5M -benchtime 3x
// ./engine/safetensors` prints the time per parse.
func BenchmarkHeader1_5MZeroTensors(b *testing.B) {
	data := manyZeroTensors(1_500_000)
	b.Logf("header of %d bytes (limit %d)", len(data)-8, MaxHeaderSize)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		f, err := FromBytes("hostile.safetensors", data)
		if err != nil {
			b.Fatal(err)
		}
		if f.Len() != 1_500_000 {
			b.Fatalf("%d tensors", f.Len())
		}
	}
}
