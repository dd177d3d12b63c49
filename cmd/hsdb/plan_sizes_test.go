package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlanSizesPrecision: `hsdb plan` wrote every MiB figure rounded to a
// whole MiB (1.125 MiB as "1 MiB"; 2.5 MiB as "2 MiB"); sizes now have
// three significant digits (engine/bytesize), the same in every command.
// By hand for testdata/hf/llama (3 layers, 2 kv heads of head_dim 12, f32)
// at --tp 2 and 64 sequences of 64 tokens (max_position_embeddings), 4096
// rows: each rank holds 1 kv head, so its KV cache is
// 2 (k and v) × 1 × 12 × 4 B × 3 layers × 4096 = 1179648 B = 1.125 MiB,
// written "1.12 MiB" (the half rounds to even); its weights are 441984 B
// (TestLoadRefusedPerDevice) = 431.6 KiB, "432 KiB"; --device-memory
// 2500KiB is 2.44 MiB, "2.44 MiB" where the plan names it.
func TestPlanSizesPrecision(t *testing.T) {
	var out, errOut bytes.Buffer
	code := hsdbMain([]string{"plan", "--model", "../../testdata/hf/llama", "--tp", "2", "--seqs", "64", "--seq-len", "64", "--device", "cpu", "--device-memory", "2500KiB"}, stdio{Out: &out, Err: &errOut})
	if code != 1 {
		t.Fatalf("exit %d, want 1 (does not fit in 2500 KiB): %s%s", code, out.String(), errOut.String())
	}
	var row []string
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "0-1" {
			row = f
		}
	}
	// 0-1, weights (2 fields), of which quantized (2), KV cache (2), ...
	if len(row) < 7 || strings.Join(row[1:3], " ") != "432 KiB" || strings.Join(row[5:7], " ") != "1.12 MiB" {
		t.Errorf("row of ranks 0-1: %q, want weights 432 KiB and KV cache 1.12 MiB in:\n%s", row, out.String())
	}
	if !strings.Contains(out.String(), "2.44 MiB") {
		t.Errorf("the device memory 2500 KiB is not named as 2.44 MiB in:\n%s", out.String())
	}
}
