package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureSaveDTypeSpellings: `hsdb capture --save-dtype` takes the
// spellings `dump --dtype` takes (one parser, tensor.ParseFloatDType), the
// manifest recording its safetensors name (F32, BF16, F16); an unknown
// one is refused naming every accepted spelling, before the model loads.
func TestCaptureSaveDTypeSpellings(t *testing.T) {
	dir := t.TempDir()
	for i, c := range []struct{ spelling, want string }{
		{"f32", "F32"}, {"fp32", "F32"}, {"float32", "F32"}, {"float", "F32"}, {"torch.float32", "F32"}, {"F32", "F32"},
		{"bf16", "BF16"}, {"bfloat16", "BF16"}, {"torch.bfloat16", "BF16"}, {"BF16", "BF16"},
		{"f16", "F16"}, {"fp16", "F16"}, {"float16", "F16"}, {"half", "F16"}, {"torch.float16", "F16"},
	} {
		out := filepath.Join(dir, strings.Repeat("d", i+1))
		if _, errs, code := runHsdb(t, "capture", "--layers", "0", "--ids", "1,403,407", "--save-dtype", c.spelling, "--out", out); code != 0 {
			t.Fatalf("--save-dtype %s: exit %d: %s", c.spelling, code, errs)
		}
		b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Capture struct {
				DType string `json:"dtype"`
			} `json:"capture"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Capture.DType != c.want {
			t.Errorf("--save-dtype %s: manifest dtype %q (%v), want %s", c.spelling, m.Capture.DType, err, c.want)
		}
	}
	_, errs, code := runHsdb(t, "capture", "--model", filepath.Join(dir, "no-model"), "--layers", "0", "--ids", "1,2", "--save-dtype", "bfloat", "--out", filepath.Join(dir, "bad"))
	want := `--save-dtype "bfloat": want f32, bf16 or f16 (also float32, fp32, float, bfloat16, float16, fp16, half; each also as torch.NAME; any case)`
	if code != 2 || !strings.Contains(errs, want) {
		t.Errorf("--save-dtype bfloat: exit %d, stderr %q\nwant 2 and %s", code, errs, want)
	}
}
