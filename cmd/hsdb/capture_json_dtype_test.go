package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureJSONDTypeName: `hsdb capture --json` gave the files' dtype as
// the manifest's safetensors name ("BF16") while its text, --save-dtype
// and every other JSON dtype of hsdb (info model, print) say "bf16"; the
// JSON now names it as they do. A resume refused for another dtype named
// the two sides in the manifest's spelling too ("dtype BF16, now F32").
func TestCaptureJSONDTypeName(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ flag, want string }{{"bfloat16", "bf16"}, {"torch.float16", "f16"}, {"F32", "f32"}} {
		out := filepath.Join(dir, c.want)
		stdout, errs, code := runHsdb(t, "capture", "--layers", "0", "--ids", "1,403,407", "--save-dtype", c.flag, "--out", out, "--json")
		var r struct {
			DType string `json:"dtype"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || r.DType != c.want {
			t.Errorf("--save-dtype %s --json: exit %d, dtype %q (%v; stderr %q), want %q", c.flag, code, r.DType, err, errs, c.want)
		}
		text, _, _ := runHsdb(t, "capture", "--layers", "0", "--ids", "1,403,407", "--save-dtype", c.flag, "--out", out)
		if !strings.Contains(text, "(stream), "+c.want+", model") {
			t.Errorf("--save-dtype %s: text %q does not name %s", c.flag, text, c.want)
		}
	}
	// A finished bf16 dump asked again in f32: refused naming both as the flags do.
	_, errs, code := runHsdb(t, "capture", "--layers", "0", "--ids", "1,403,407", "--save-dtype", "f32", "--out", filepath.Join(dir, "bf16"))
	if code == 0 || !strings.Contains(errs, "dtype bf16, now f32") {
		t.Errorf("bf16 dump captured again as f32: exit %d, stderr %q, want the refusal to say \"dtype bf16, now f32\"", code, errs)
	}
}
