package main

import (
	"bytes"
	"strings"
	"testing"

	"hsdb/engine/enginetest"
)

// TestGeneratePromptEchoWithoutBOS: generate prints the prompt as it feeds
// it (run.c), from the token after BOS. Kimi's tiktoken.model adds no
// [BOS] to a text (tokenizer.TextBOS), so the prompt's first token was the
// one left out: `generate --prompt "你好"` on a Kimi model printed
// "\xbd\xa0好..." (你 is the bytes e4 bd a0, one token each in kimi_tiny,
// and e4 was never printed), shown as "��好". The output must start with
// the prompt's own text, derived by hand: the prompt itself.
func TestGeneratePromptEchoWithoutBOS(t *testing.T) {
	dir := enginetest.KimiTinyDir(t, "../../testdata")
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"generate", "--model", dir, "--prompt", "你好", "-n", "8"}, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "你好") {
		t.Errorf("stdout %q does not start with the prompt %q", out.String(), "你好")
	}
}
