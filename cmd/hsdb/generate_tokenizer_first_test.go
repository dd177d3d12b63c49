package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateTokenizerBeforeLoad: `generate --prompt` (or without --ids
// on a model with no bos_token_id, which would start from the tokenizer's
// BOS: TestGenerateNoBOSRefused) on a model directory without a tokenizer
// says so before loading the weights. The directories here have a
// fixture's config.json and no weights at all, so a load would fail first
// on them (it did: the missing tokenizer was said only after a load that
// takes minutes on a large model).
func TestGenerateTokenizerBeforeLoad(t *testing.T) {
	dir := configOnlyDir(t, "llama")
	noBOS := configOnlyDir(t, "qwen2") // config.json: bos_token_id null
	// Nothing to start from is a usage error (exit 2: TestGenerateNoBOSRefused);
	// so is --prompt without a tokenizer (give --ids), as capture --data's
	// text rows without one.
	for _, c := range []struct {
		args []string
		want string
		exit int
	}{
		{[]string{"generate", "--model", dir, "--prompt", "hi"}, "hsdb generate: --prompt needs a tokenizer: no tokenizer in " + dir, 2},
		{[]string{"generate", "--model", noBOS, "-n", "3"}, "hsdb generate: nothing to start generating from: no --ids and no tokenizer (no tokenizer in " + noBOS, 2},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != c.exit || out != "" || !strings.HasPrefix(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and the one line %q…", c.args, code, out, errs, c.exit, c.want)
		}
	}
	// A model path that does not exist is named as --model (a usage
	// error, exit 2), not as a missing tokenizer.
	_, errs, code := runHsdb(t, "generate", "--model", filepath.Join(dir, "missing"), "--prompt", "hi")
	if code != 2 || strings.Contains(errs, "tokenizer") || !strings.Contains(errs, "missing") {
		t.Errorf("missing model: exit %d, stderr %q", code, errs)
	}
}
