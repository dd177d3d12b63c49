package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyCaptureFileNamed: a 0-byte capture file was refused as
// "neither a safetensors file nor a torch.save zip archive (starts with
// )", as though it held bytes of another format; it is now called empty.
func TestEmptyCaptureFileNamed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "data_0.pt")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadCaptureFile(p)
	if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), p+": unreadable capture file: the file is empty (0 bytes)") || strings.Contains(err.Error(), "starts with") {
		t.Errorf("empty file: %v", err)
	}
}
