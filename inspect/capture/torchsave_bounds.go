package capture

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"

	"hsdb/engine/hostmem"
	"hsdb/engine/tensor"
)

// maxTorchSaveExtra bounds what an archive hsdb wrote holds besides its
// tensors' bytes: data.pkl (TorchPickle of four tensors: under 1 KiB), the
// small records (version, byteorder, .format_version, .storage_alignment,
// .data/serialization_id: a few bytes each) and zip's headers, 64-byte
// alignment padding, data descriptors and central directory (under 300
// bytes a record). It is also the bound on any record but data/N.
const maxTorchSaveExtra = 1 << 20

// torchSaveRecordBound returns the most bytes record name (relative to
// archive/) of an archive hsdb wrote for rec may hold: data/i holds tensor
// order[i] of rec exactly (its shape × its dtype's size), any other record
// at most maxTorchSaveExtra.
func torchSaveRecordBound(rec SeqRecord, order []string, name string) int64 {
	if s, ok := strings.CutPrefix(name, "data/"); ok {
		if i, err := strconv.Atoi(s); err == nil && i >= 0 && i < len(order) {
			if r, ok := rec.Tensors[order[i]]; ok {
				if dt, ok := tensor.FromSafetensors(r.DType); ok {
					return tensorBytes(r.Shape, dt)
				}
			}
			return 0
		}
	}
	return maxTorchSaveExtra
}

// tensorBytes is product(shape) × dt's size, saturating at 1<<62 (a
// manifest may declare any shape).
func tensorBytes(shape []int, dt tensor.DType) int64 {
	n := int64(dt.Size())
	for _, d := range shape {
		if d < 0 {
			return 0
		}
		if d != 0 && n > (1<<62)/int64(d) {
			return 1 << 62
		}
		n *= int64(d)
	}
	return n
}

// gunzipWithin gunzips data, the gzipped archive at path hsdb wrote for
// rec, refusing it once it expands past what it may hold: its tensors'
// bytes plus maxTorchSaveExtra, and at most the host's MemAvailable
// (engine/hostmem). A gzip bomb (a small file that expands to gigabytes)
// is refused after that many bytes, having allocated no more.
func gunzipWithin(path string, data []byte, rec SeqRecord, order []string) ([]byte, error) {
	bound, why := int64(maxTorchSaveExtra), "its tensors and torch.save's records"
	for _, k := range order {
		if r, ok := rec.Tensors[k]; ok {
			if dt, ok := tensor.FromSafetensors(r.DType); ok {
				bound = min(bound+tensorBytes(r.Shape, dt), 1<<62)
			}
		}
	}
	if avail, ok := hostmem.Available(); ok && avail < bound {
		bound, why = avail, "the host's MemAvailable"
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", path, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, bound+1))
	if err != nil {
		return nil, fmt.Errorf("%s: gzip: %w", path, err)
	}
	if int64(len(out)) > bound {
		return nil, fmt.Errorf("%s: gunzips past %d bytes, what %s may hold", path, bound, why)
	}
	return out, nil
}
