package main

import (
	"strings"
	"testing"
)

// TestInfoMemoryNamesStages: at --pp 2 a rank's `info memory` bytes are
// summed over its stages' devices (each stage holds some layers: the KV
// cache of 4 layers where `hsdb plan --pp 2` counts 2 per stage), which the
// table did not say; it now names each rank's device, every stage's with
// its layers, as `info ranks` does. The DeepSeek-V3 fixture's 4 layers
// split 2 + 2 (vLLM's get_pp_indices); at --pp 1 the device is cpu:R.
func TestInfoMemoryNamesStages(t *testing.T) {
	script := "input ids 1,2,3 ; ids 4,5\nrun\ninfo memory\n"
	code, out, errs := runWithStdin([]string{"--model", "../../testdata/hf/deepseek_v3", "--tp", "2", "--pp", "2", "--workers"}, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"device\n", "cpu:0 (stage 0: layers 0-1) + cpu:2 (stage 1: layers 2-3)\n", "cpu:1 (stage 0: layers 0-1) + cpu:3 (stage 1: layers 2-3)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("info memory at --pp 2 lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runWithStdin([]string{"--model", "../../testdata/hf/deepseek_v3", "--tp", "2", "--json"}, "info memory\n")
	if code != 0 || !strings.Contains(out, `"device":"cpu:0"`) || !strings.Contains(out, `"device":"cpu:1"`) {
		t.Errorf("info memory --json at --pp 1: exit %d\n%s%s", code, out, errs)
	}
}
