package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestCaptureClaims: what a manifest says its files hold must be
// something hsdb writes. check takes capture.dtype and capture.what as
// the dtype and site every file is held to, and an unknown value was read
// as no claim at all: a manifest saying dtype "Q99", what "zzz" or format
// "zzz" passed files of any dtype and site ("verdict: valid"). Each is now
// refused with ErrManifest naming the field; the values hsdb writes (and
// an absent dtype, what or format) are read.
func TestManifestCaptureClaims(t *testing.T) {
	read := func(capture string) error {
		dir := t.TempDir()
		body := `{"format": "` + ManifestFormat + `", "model": {"world_size": 1}, "capture": ` + capture + `, "sequences": []}`
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadManifest(dir)
		return err
	}
	for capture, want := range map[string]string{
		`{"layers": [1], "what": "stream", "dtype": "Q99"}`:                        `capture.dtype "Q99"`,
		`{"layers": [1], "what": "stream", "dtype": "I64"}`:                        `capture.dtype "I64"`,
		`{"layers": [1], "what": "zzz", "dtype": "F32"}`:                           `capture.what "zzz"`,
		`{"layers": [1], "what": "Stream", "dtype": "F32"}`:                        `capture.what "Stream"`,
		`{"layers": [1], "what": "stream", "dtype": "F32", "format": "zzz"}`:       `capture.format "zzz"`,
		`{"layers": [1], "what": "stream", "dtype": "F32", "format": "Specforge"}`: `capture.format "Specforge"`,
	} {
		err := read(capture)
		if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ManifestName) {
			t.Errorf("capture %s: %v, want ErrManifest naming %s in %s", capture, err, want, ManifestName)
		}
	}
	for _, capture := range []string{
		`{"layers": [1], "what": "stream", "dtype": "F32"}`,
		`{"layers": [1], "what": "hidden_states", "dtype": "BF16"}`,
		`{"layers": [1], "what": "residual", "dtype": "F16"}`,
		`{"layers": [], "what": "", "dtype": "F32"}`,
		`{"layers": [1], "what": "stream", "dtype": "BF16", "format": "speculators"}`,
		`{"layers": [1], "what": "stream", "dtype": "BF16", "format": "specforge"}`,
		`{"layers": [1]}`,
	} {
		if err := read(capture); err != nil {
			t.Errorf("capture %s: %v, want it read", capture, err)
		}
	}
}
