package check

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedTorchNamed: a torch.save archive cut short (an interrupted
// write or copy: the zip's end-of-central-directory record, at the end of
// the file, is gone), plain or gzipped (SpecForge's .ckpt.gz), is reported
// as cut short with its size, not as "not a torch.save zip archive".
func TestTruncatedTorchNamed(t *testing.T) {
	good, err := os.ReadFile("../../testdata/captures/good_speculators.pt")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(good)
	w.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"pt-100", good[:100]},
		{"pt-half", good[:len(good)/2]},
		{"pt-minus1", good[:len(good)-1]},
		{"gz-half", gz.Bytes()[:gz.Len()/2]},
		{"gz-minus4", gz.Bytes()[:gz.Len()-4]},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadCaptureFile(p)
		if err == nil || !errors.Is(err, ErrUnreadable) {
			t.Fatalf("%s: %v; want ErrUnreadable", tc.name, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "cut short") || !strings.Contains(msg, fmt.Sprint(len(tc.data))) || strings.Contains(msg, "not a torch.save zip archive") {
			t.Errorf("%s: %q; want it called cut short with its size %d, not another format", tc.name, msg, len(tc.data))
		}
	}
}
