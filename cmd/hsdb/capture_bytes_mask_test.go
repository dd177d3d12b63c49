package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
)

// TestCaptureBytesPerTokenWithLossMask: `hsdb capture --data` rows with a
// loss_mask on the DeepSeek-V3 fixture (hidden 96, f32, --layers 0,1,2,3)
// printed "disk: 1544 bytes per token of tensors" (4 × 96 × 4 + 8 for the
// token id), while each file also holds loss_mask [len] i64: 1552 bytes
// per token. The figure is checked against the files themselves (their
// tensors' bytes over their tokens, from the safetensors headers), and a
// job without masks still prints 1544.
func TestCaptureBytesPerTokenWithLossMask(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		rows string
		want int64
	}{
		{`{"input_ids": [0, 5, 17], "loss_mask": [0, 1, 1]}` + "\n" + `{"input_ids": [0, 9], "loss_mask": [0, 1]}` + "\n", 4*96*4 + 8 + 8},
		{`{"input_ids": [0, 5, 17]}` + "\n" + `{"input_ids": [0, 9]}` + "\n", 4*96*4 + 8},
	} {
		data := filepath.Join(dir, "d.jsonl")
		if err := os.WriteFile(data, []byte(c.rows), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "dump")
		stdout, errs, code := runHsdb(t, "capture", "--model", "../../testdata/hf/deepseek_v3", "--layers", "0,1,2,3", "--data", data, "--out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var bytes, tokens int64
		for _, name := range []string{"seq_000000.safetensors", "seq_000001.safetensors"} {
			f, err := safetensors.Open(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range f.Names() {
				x, err := f.Tensor(n)
				if err != nil {
					t.Fatal(err)
				}
				bytes += int64(len(x.Data))
				if n == "input_ids" {
					tokens += int64(x.Shape[0])
				}
			}
			f.Close()
		}
		if bytes != c.want*tokens {
			t.Fatalf("premise: the files hold %d bytes for %d tokens, not %d per token", bytes, tokens, c.want)
		}
		if want := "disk: " + strconv.FormatInt(c.want, 10) + " bytes per token of tensors"; !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}
