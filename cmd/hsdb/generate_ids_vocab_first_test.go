package main

import (
	"strings"
	"testing"
)

// TestGenerateIDsCheckedBeforeLoad: --ids past the llama fixture's
// config.json vocab_size 101 (ids 0..100) is refused before the load,
// exit 2 as capture --ids refuses it (it was exit 1, after a load of
// minutes on a large model); the directory has no weights, so a load
// would fail first on them. Id 100, the last of the vocabulary, passes
// the check and reaches the load's error.
func TestGenerateIDsCheckedBeforeLoad(t *testing.T) {
	dir := configOnlyDir(t, "llama")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ids", "1,101"}, 2, "hsdb generate: prompt token 1 is id 101, outside the vocabulary [0, 101)"},
		{[]string{"--ids", "1,100", "-n", "1"}, 2, "hsdb generate: the prompt has 2 tokens, more than -n 1 positions"},
		{[]string{"--ids", "1,100", "-n", "3"}, 1, "hsdb generate: --model " + dir + ": safetensors: empty checkpoint directory"},
	} {
		_, errs, code := runHsdb(t, append([]string{"generate", "--model", dir}, c.args...)...)
		if code != c.code || !strings.HasPrefix(errs, c.want) {
			t.Errorf("generate %v: exit %d, stderr %q; want exit %d and %q…", c.args, code, errs, c.code, c.want)
		}
	}
}
