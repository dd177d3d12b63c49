package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckNoModelRunFlags: `check --no-model` runs no forward pass, so
// a flag that says only how it runs (--w8a8, --dtype, --device, the
// layers loaded, the rank workers) cannot apply; it was taken and
// ignored (check --no-model --w8a8: exit 0, the file judged as without
// it). Each is refused as a contradiction, exit 2, naming the flag.
// --tp (the world size the capture ran at) and --ep (which --tp fits)
// still apply without the model and stay accepted; diff refuses
// --no-model itself.
func TestCheckNoModelRunFlags(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(data, []byte(`{"input_ids": [0, 5, 17, 33]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const model = "../../testdata/hf/deepseek_v3"
	out := filepath.Join(dir, "d")
	if _, errs, code := runHsdb(t, "capture", "--model", model, "--layers", "0,1", "--data", data, "--out", out); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	for _, c := range [][]string{
		{"--w8a8"}, {"--dtype", "bf16"}, {"--device", "cpu"}, {"--load-layers", "0-1"}, {"--pp", "2"},
		{"--workers"}, {"--workers=false"}, {"--listen", "127.0.0.1:0"}, {"--worker-timeout", "1m"},
		{"--worker-links", "hub"}, {"--worker-bin", os.Args[0]},
	} {
		want := c[0] + " and --no-model contradict each other"
		if i := strings.Index(want, "="); i >= 0 && i < strings.Index(want, " ") {
			want = want[:i] + want[strings.Index(want, " "):]
		}
		for _, m := range [][]string{nil, {"--model", "../../testdata/hf/deepseek_v3_fp8"}} {
			args := append(append(append([]string{"check", out, "--no-model"}, m...), c...), "--summary")
			if _, errs, code := runHsdb(t, args...); code != 2 || !strings.Contains(errs, want) {
				t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", args, code, errs, want)
			}
		}
	}
	if _, errs, code := runHsdb(t, "check", out, "--no-model", "--w8a8", "--dtype", "bf16"); code != 2 || !strings.Contains(errs, "--dtype, --w8a8 and --no-model contradict each other") {
		t.Errorf("check --no-model --w8a8 --dtype bf16: exit %d, stderr %q", code, errs)
	}
	for _, c := range [][]string{{"--tp", "2"}, {"--ep"}, {"--ep", "--tp", "2"}, {"--moe", "ep"}} {
		args := append([]string{"check", out, "--no-model", "--model", model, "--summary"}, c...)
		if stdout, errs, code := runHsdb(t, args...); code != 0 {
			t.Errorf("%v: exit %d, stderr %q\n%s", args, code, errs, stdout)
		}
	}
	if _, errs, code := runHsdb(t, "diff", out, "--model", model, "--no-model", "--w8a8"); code != 2 || !strings.Contains(errs, "--no-model: diff compares") {
		t.Errorf("diff --no-model --w8a8: exit %d, stderr %q", code, errs)
	}
}
