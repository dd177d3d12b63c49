package repl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpDTypeSpellings: `dump --dtype` takes the spellings `hsdb capture
// --save-dtype` takes (one parser, tensor.ParseFloatDType): hsdb's names,
// PyTorch's with and without "torch.", the safetensors names; the manifest
// records the dtype by its safetensors name (F32, BF16, F16). An unknown
// one is refused naming every accepted spelling.
func TestDumpDTypeSpellings(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,403,407")
	f.Exec("capture layers 0")
	f.Exec("run")
	dir := t.TempDir()
	for i, c := range []struct{ spelling, want string }{
		{"f32", "F32"}, {"fp32", "F32"}, {"float32", "F32"}, {"float", "F32"}, {"torch.float32", "F32"}, {"F32", "F32"},
		{"bf16", "BF16"}, {"bfloat16", "BF16"}, {"torch.bfloat16", "BF16"}, {"BF16", "BF16"},
		{"f16", "F16"}, {"fp16", "F16"}, {"float16", "F16"}, {"half", "F16"}, {"torch.float16", "F16"},
	} {
		d := filepath.Join(dir, strings.Repeat("d", i+1))
		f.Exec("dump " + d + " --dtype=" + c.spelling)
		b, err := os.ReadFile(filepath.Join(d, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Capture struct {
				DType string `json:"dtype"`
			} `json:"capture"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Capture.DType != c.want {
			t.Errorf("dump --dtype %s: manifest dtype %q (%v), want %s", c.spelling, m.Capture.DType, err, c.want)
		}
	}
	err := f.Term.Exec("dump " + filepath.Join(dir, "bad") + " --dtype bfloat")
	want := `dump --dtype "bfloat": want f32, bf16 or f16 (also float32, fp32, float, bfloat16, float16, fp16, half; each also as torch.NAME; any case)`
	if err == nil || err.Error() != want {
		t.Errorf("dump --dtype bfloat: %v\nwant %s", err, want)
	}
}
