package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenizerConfigDanglingLink: a tokenizer_config.json that is a
// symbolic link to a missing file (an HF hub snapshot with a blob never
// downloaded) is refused naming it and its target, for the HF and the
// Kimi tokenizer; it was read as absent (fs.ErrNotExist), so the
// tokenizer loaded silently with the released defaults for BOS, EOS and
// the special tokens' names instead of the model's own.
func TestTokenizerConfigDanglingLink(t *testing.T) {
	for _, c := range []struct {
		name string
		path string
		load func(string) error
	}{
		{"kimi", kimiDir(t, byteRanks(), ""), func(p string) error { _, err := LoadKimi(p); return err }},
		{"hf", writeSynthHF(t), func(p string) error { _, err := LoadHF(p); return err }},
	} {
		dir := filepath.Dir(c.path)
		cfg := filepath.Join(dir, "tokenizer_config.json")
		os.Remove(cfg)
		target := filepath.Join(dir, "blobs", "missing")
		if err := os.Symlink(target, cfg); err != nil {
			t.Skip("symlink:", err)
		}
		err := c.load(c.path)
		if err == nil || !strings.Contains(err.Error(), cfg) || !strings.Contains(err.Error(), target) {
			t.Errorf("%s: %v; want an error naming %s and its target %s", c.name, err, cfg, target)
		}
	}
}
