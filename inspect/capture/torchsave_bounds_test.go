package capture

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"runtime"
	"strings"
	"testing"
)

// boundsRecord is a sequence of 4 tokens of hidden size 8 with 3 aux
// layers: input_ids and loss_mask [4] i64 (32 bytes each), hidden_state
// [4, 8] bf16 (64), aux_hidden_state [4, 24] bf16 (192): 320 bytes of
// tensors.
func boundsRecord() SeqRecord {
	return SeqRecord{Tensors: map[string]TensorRecord{
		"input_ids":        {Shape: []int{4}, DType: "I64"},
		"loss_mask":        {Shape: []int{4}, DType: "I64"},
		"hidden_state":     {Shape: []int{4, 8}, DType: "BF16"},
		"aux_hidden_state": {Shape: []int{4, 24}, DType: "BF16"},
	}}
}

// allocs runs f and returns the bytes it allocated.
func allocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTorchSaveGzipBombRefused: re-reading a SpecForge file (on resume,
// the file and the manifest that vouches for it may come from anyone)
// that gunzips to "PK\x03\x04" and 64 MiB of zeros is refused once it
// passes what the record's tensors (320 bytes) and torch.save's other
// records (1 MiB) may hold: 1048896 bytes, by hand. The whole stream was
// gunzipped into memory, without bound.
func TestTorchSaveGzipBombRefused(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte("PK\x03\x04"))
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	var err error
	got := allocs(func() { _, err = readTorchSaveBytes("rows_0-2000/data_0.ckpt.gz", buf.Bytes(), boundsRecord()) })
	if err == nil || !strings.Contains(err.Error(), "rows_0-2000/data_0.ckpt.gz: gunzips past 1048896 bytes") {
		t.Fatalf("gzip bomb: %v, want it refused past 1048896 bytes naming the file", err)
	}
	if got > 16<<20 {
		t.Errorf("refusing the bomb allocated %d MiB", got>>20)
	}
}

// TestTorchSaveRecordOverItsTensor: a record archive/data/0 (input_ids,
// 32 bytes) deflated from 16 MiB of zeros is refused from its declared
// size, before it is inflated, naming the archive and the record.
func TestTorchSaveRecordOverItsTensor(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "archive/data/0", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(make([]byte, 16<<20))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	got := allocs(func() { _, err = readTorchSaveBytes("data_0.ckpt", buf.Bytes(), boundsRecord()) })
	if err == nil || !strings.Contains(err.Error(), "data_0.ckpt: record archive/data/0 declares 16777216 bytes uncompressed, more than the 32 it may hold") {
		t.Fatalf("deflated record over its tensor: %v", err)
	}
	if got > 8<<20 {
		t.Errorf("refusing the record allocated %d MiB", got>>20)
	}
}
