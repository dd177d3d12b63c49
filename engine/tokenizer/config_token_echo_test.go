package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigTokenWrongTypeNamedNotEchoed: a tokenizer_config.json whose
// bos_token is neither a string nor an AddedToken object (here a 1 MB
// array) is refused naming the field, the JSON type and its size, for the HF and the
// Kimi tokenizer; the message echoed the whole value, a 1 MB error line
// (up to the 512 MiB file bound).
func TestConfigTokenWrongTypeNamedNotEchoed(t *testing.T) {
	cfg := `{"bos_token": [` + strings.Repeat(`1,`, 500_000) + `1]}`
	for _, c := range []struct {
		name string
		path string
		load func(string) error
	}{
		{"kimi", kimiDir(t, byteRanks(), cfg), func(p string) error { _, err := LoadKimi(p); return err }},
		{"hf", writeSynthHF(t), func(p string) error { _, err := LoadHF(p); return err }},
	} {
		if c.name == "hf" {
			if err := os.WriteFile(filepath.Join(filepath.Dir(c.path), "tokenizer_config.json"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := c.load(c.path)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "bos_token: want a string or an AddedToken object, got a JSON array") {
			t.Errorf("%s: %.300v; want ErrFormat naming bos_token and the JSON array", c.name, err)
		}
		if err != nil && len(err.Error()) > 1000 {
			t.Errorf("%s: the error is %d bytes long", c.name, len(err.Error()))
		}
	}
}
