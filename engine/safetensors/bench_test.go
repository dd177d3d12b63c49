package safetensors

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"hsdb/engine/tensor"
)

// BenchmarkOpenRead256MB opens a generated 256 MiB file of 64 BF16 [2048,
// 1024] tensors and reads every byte of every tensor (an xor fold, so each
// page is really touched). MB/s is the file's bytes per second; the file is
// in the page cache after the first round, so this measures mapping,
// validation and memory bandwidth, not the disk.
func BenchmarkOpenRead256MB(b *testing.B) {
	p := write256MB(b)
	b.ResetTimer()
	var sink uint64
	for b.Loop() {
		f, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range f.Names() {
			x, err := f.Tensor(n)
			if err != nil {
				b.Fatal(err)
			}
			d := x.Data
			for i := 0; i+8 <= len(d); i += 8 {
				sink ^= binary.LittleEndian.Uint64(d[i:])
			}
		}
		f.Close()
	}
	if sink == 1 {
		b.Log(sink)
	}
}

// BenchmarkOpenHeader opens a file of 4096 small tensors: the cost of
// parsing and validating a large header (a DeepSeek-V3 shard has ~1000).
func BenchmarkOpenHeader(b *testing.B) {
	in := make([]Named, 4096)
	one := tensor.New(tensor.BF16, 4, 4)
	for i := range in {
		in[i] = Named{fmt.Sprintf("model.layers.%d.mlp.experts.%d.gate_proj.weight", i/256, i%256), one}
	}
	p := filepath.Join(b.TempDir(), "hdr.safetensors")
	if err := WriteFile(p, in, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkDetach256MB is BenchmarkOpenRead256MB's file opened and every
// tensor detached from the mapping (what the CPU backend's load now does
// with weights it keeps in their stored dtype): compare its MB/s with
// BenchmarkOpenRead256MB's, which only reads each page.
func BenchmarkDetach256MB(b *testing.B) {
	p := write256MB(b)
	b.ResetTimer()
	for b.Loop() {
		f, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range f.Names() {
			x, err := f.Tensor(n)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Detach(x); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
}

// write256MB writes the benchmarks' file of 64 BF16 [2048, 1024] tensors
// (256 MiB) into a temporary directory, sets b's bytes per round to its
// tensors' bytes and returns its path.
func write256MB(b *testing.B) string {
	const nt, rows, cols = 64, 2048, 1024
	one := tensor.New(tensor.BF16, rows, cols)
	for i := range one.Data {
		one.Data[i] = byte(i * 31)
	}
	in := make([]Named, nt)
	for i := range in {
		in[i] = Named{fmt.Sprintf("model.layers.%d.mlp.down_proj.weight", i), one}
	}
	p := filepath.Join(b.TempDir(), "bench.safetensors")
	if err := WriteFile(p, in, nil); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(nt * rows * cols * 2)
	return p
}
