package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortCaptureFileNamed: a capture file cut short within its first 8
// bytes (`truncate -s 8` of an hsdb dump's seq_000000.safetensors leaves
// its header length 400, 90 01 00 00 00 00 00 00) was refused as "neither
// a safetensors file nor a torch.save zip archive", as though it held
// another format; no format can be told from so few bytes, so the message
// gives the size and says it is too short for either.
func TestShortCaptureFileNamed(t *testing.T) {
	for _, b := range [][]byte{{0x90, 0x01, 0, 0, 0, 0, 0, 0}, {0x90, 0x01, 0, 0}} {
		p := filepath.Join(t.TempDir(), "seq_000000.safetensors")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadCaptureFile(p)
		want := "the file is only " + string(rune('0'+len(b))) + " bytes"
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "too short") || strings.Contains(err.Error(), "neither") {
			t.Errorf("%d-byte file: %v; want ErrUnreadable saying %q and too short", len(b), err, want)
		}
	}
}
