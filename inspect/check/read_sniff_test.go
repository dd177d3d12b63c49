package check

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
)

// TestSafetensorsBadHeaderLengthNamed: a file laid out as safetensors (an
// 8-byte length, then the header's '{') whose length is absurd — a
// corrupted or hostile prefix — is reported as a safetensors file with a
// bad header length (the safetensors package's own sentinel, naming the
// length), not as "neither a safetensors file nor a torch.save archive".
func TestSafetensorsBadHeaderLengthNamed(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		length uint64
		want   error
		digits string
	}{
		{"2^62", 1 << 62, safetensors.ErrHeaderTooLarge, "4611686018427387904"},
		{"2^64-1", 1<<64 - 1, safetensors.ErrHeaderTooLarge, "18446744073709551615"},
		{"2^30", 1 << 30, safetensors.ErrHeaderTooLarge, "1073741824"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".safetensors")
			b := binary.LittleEndian.AppendUint64(nil, tc.length)
			b = append(b, `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`...)
			b = append(b, 0, 0, 0, 0)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadCaptureFile(p)
			if err == nil {
				t.Fatal("read a file whose header length is absurd")
			}
			if !errors.Is(err, ErrUnreadable) || !errors.Is(err, tc.want) {
				t.Fatalf("error %q: want ErrUnreadable wrapping %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.digits) || strings.Contains(err.Error(), "neither") {
				t.Fatalf("error %q: want the header length %s named, not an unknown format", err, tc.digits)
			}
		})
	}
}

// TestNpyNamed: a NumPy .npy file (the REPL's `save stream F.npy`; its
// magic \x93NUMPY by the .npy format's spec) is named as one, with the
// formats check reads, not "neither a safetensors file nor a torch.save
// zip archive (starts with 93 4e 55 4d ...)".
func TestNpyNamed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.npy")
	hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)+1), 0)
	b = append(append(append(b, hdr...), '\n'), 0, 0, 0, 0)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadCaptureFile(p)
	want := p + ": unreadable capture file: a NumPy .npy file (one array, as `save TENSOR F.npy` writes): check reads safetensors and torch.save captures; `save TENSOR F.safetensors` writes one it reads"
	if err == nil || !errors.Is(err, ErrUnreadable) || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
