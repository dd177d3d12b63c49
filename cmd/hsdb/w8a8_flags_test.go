package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestW8A8Flag: --w8a8 with --device cpu is refused as a contradiction
// (exit 2) in every command of the model group; a CPU load of an fp8
// checkpoint with it (the device left to default, no GPU here) fails
// naming why; `plan --w8a8` counts the fp8 copy of a linear's input and
// cuBLASLt's workspace (32 MiB) where the widened weight was: more
// activation bytes than without it, the same weights.
func TestW8A8Flag(t *testing.T) {
	const model = "../../testdata/hf/deepseek_v3_fp8"
	want := "--w8a8 and --device cpu contradict each other"
	for _, args := range [][]string{
		{"--model", model, "--device", "cpu", "--w8a8", "-x", os.DevNull},
		{"plan", "--model", model, "--device", "cpu", "--w8a8"},
		{"generate", "--model", model, "--device", "cpu", "--w8a8", "--ids", "1,2", "-n", "3"},
	} {
		if _, errs, code := runHsdb(t, args...); code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if _, errs, code := runHsdb(t, "generate", "--model", model, "--w8a8", "--ids", "1,2", "-n", "3"); code == 0 || !strings.Contains(errs, "--w8a8") || !strings.Contains(errs, "--device cuda") {
		t.Errorf("generate --w8a8 without a GPU: exit %d, stderr %q", code, errs)
	}
	type rank struct {
		Weights     int64 `json:"weights_bytes"`
		Activations int64 `json:"activation_bytes"`
	}
	plans := map[bool]rank{}
	for _, w8 := range []bool{false, true} {
		args := []string{"plan", "--model", model, "--device", "cuda", "--max-tokens", "64", "--json"}
		if w8 {
			args = append(args, "--w8a8")
		}
		out, errs, code := runHsdb(t, args...)
		var p struct{ Ranks []rank }
		if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Ranks) != 1 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		plans[w8] = p.Ranks[0]
	}
	if a, b := plans[false], plans[true]; a.Weights != b.Weights || b.Activations <= a.Activations || b.Activations > a.Activations+40<<20 {
		t.Errorf("plan without --w8a8 %+v, with %+v: want the same weights and up to 40 MiB more activations", a, b)
	}
}
