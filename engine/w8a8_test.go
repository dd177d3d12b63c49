package engine

import (
	"strings"
	"testing"
)

// TestW8A8Refused: --w8a8 is refused, before any weight is read, where it
// cannot apply: on the CPU backend (it dequantizes fp8 weights on load)
// and for a checkpoint without block-scaled fp8 weights; each message
// says why.
func TestW8A8Refused(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"../testdata/hf/deepseek_v3_fp8", "runs on cpu"},
		{"../testdata/hf/llama", "no quantization_config"},
	} {
		e, err := Open(c.dir, Options{TP: 2, W8A8: true})
		if err == nil {
			e.Close()
			t.Errorf("%s: --w8a8 loaded", c.dir)
			continue
		}
		if !strings.Contains(err.Error(), "--w8a8") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a --w8a8 error saying %q", c.dir, err, c.want)
		}
	}
}
