package modelpath

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// llama2cHeaderOnly writes a llama2.c checkpoint of size bytes whose header
// is dim 64, hidden_dim 128, 2 layers, 4 heads, 4 kv heads, vocab 16384
// (shared classifier), seq_len 32, its arrays left as a sparse hole of
// zeros.
func llama2cHeaderOnly(t *testing.T, size int64) string {
	t.Helper()
	var h [28]byte
	for i, v := range []uint32{64, 128, 2, 4, 4, 16384, 32} {
		binary.LittleEndian.PutUint32(h[4*i:], v)
	}
	p := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(p, h[:], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// wholeSize is the checkpoint's size, counted by hand from run.c's
// memory_map_weights (head size 16): token_embedding 16384·64 = 1048576
// floats; rms_att 2·64 = 128; wq, wk, wv, wo 2·64·64 = 8192 each; rms_ffn
// 128; w1, w2, w3 2·128·64 = 16384 each; rms_final 64; freq_cis_real and
// freq_cis_imag 32·8 = 256 each: 1131328 floats, 4525312 bytes, plus the
// 28-byte header.
const wholeSize = 28 + 4*1131328

// TestConfigDimsReadsLlama2CHeaderOnly: the config of a llama2.c .bin
// (ConfigDims, which capture, generate, plan, check and the workers' front
// ask before a load) comes from its 28-byte header. It read and converted
// the whole checkpoint (llama2c.Read), which the load then read again: a
// multi-GB .bin twice. Counted in bytes allocated, which reading the 4.3
// MiB file here costs at least once over (8.6 MiB with its float32 copy):
// under 256 KiB now. The dims are the header's, as written.
func TestConfigDimsReadsLlama2CHeaderOnly(t *testing.T) {
	p := llama2cHeaderOnly(t, wholeSize)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, err := ConfigDims(p)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if d.Hidden != 64 || d.Intermediate != 128 || d.Layers != 2 || d.Heads != 4 || d.KVHeads != 4 || d.Vocab != 16384 || d.MaxPos != 32 {
		t.Errorf("dims %+v; want the header's 64, 128, 2, 4, 4, 16384, 32", d)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Errorf("ConfigDims of a %d-byte .bin allocated %d bytes; want the header read alone (under 256 KiB)", int64(wholeSize), got)
	}
}

// TestConfigDimsLlama2CSizeFromHeader: without reading the arrays, a file
// one byte short is refused naming its last array (freq_cis_imag [32 8],
// 1024 bytes at offset wholeSize-1024) and one a byte long the byte left
// over, both with the file's path.
func TestConfigDimsLlama2CSizeFromHeader(t *testing.T) {
	for _, c := range []struct {
		size int64
		want string
	}{
		{wholeSize - 1, "array freq_cis_imag [32 8] needs 1024 bytes at offset 4524316, the file has 4525339"},
		{wholeSize + 1, "1 bytes left after the last array"},
	} {
		p := llama2cHeaderOnly(t, c.size)
		_, err := ConfigDims(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("size %d: %v; want %q naming %s", c.size, err, c.want, p)
		}
	}
}
