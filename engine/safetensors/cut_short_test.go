package safetensors

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestTruncatedFileSaysCutShort: a safetensors file cut short (an
// interrupted write or copy: `truncate -s 4495` of a 4496-byte capture)
// was reported as "tensor "c": data_offsets outside the data area:
// data_offsets [8, 16] but the data area is 11 bytes", the words of a
// corrupt header, although the header is intact; a torch.save archive cut
// short says so. With the header's tensors tiling [0, 16) exactly, the
// file is the short one: the message says it is cut short, the size it
// should have and how many bytes are missing (sizes by hand below). A
// header whose own offsets leave a hole keeps the plain message, which
// blames the tensor, not the file's length.
func TestTruncatedFileSaysCutShort(t *testing.T) {
	header := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"c":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`
	full := stFile(header, f32le(1, 2, 3, 4))
	// 8 (length prefix) + len(header) + 16 data bytes; 5 of them cut.
	want := 8 + len(header) + 16
	if len(full) != want {
		t.Fatalf("built %d bytes, want %d", len(full), want)
	}
	p := writeTemp(t, "cut.safetensors", full[:want-5])
	f, err := Open(p)
	if err == nil {
		f.Close()
		t.Fatal("Open accepted a file 5 bytes short")
	}
	msg := err.Error()
	if !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("err = %v, want ErrOutOfRange", err)
	}
	for _, s := range []string{p, `"c"`, "[8, 16]", "11 bytes", "cut short", fmt.Sprintf("should be %d bytes; it is %d (5 missing)", want, want-5)} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}

	// b begins at 12, leaving [8, 12) to nobody: not a cut-short file.
	holed := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}}`
	p = writeTemp(t, "holed.safetensors", stFile(holed, f32le(1, 2, 3, 4)))
	f, err = Open(p)
	if err == nil {
		f.Close()
		t.Fatal("Open accepted a tensor beyond the data area")
	}
	if !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), `"b"`) || strings.Contains(err.Error(), "cut short") {
		t.Errorf("err = %v; want ErrOutOfRange naming \"b\", not calling the file cut short", err)
	}
}
