package main

import (
	"strings"
	"testing"
)

// TestPlanLlama2CSaysItsSource: a plan of a llama2.c .bin said it came
// "from config.json and the checkpoint's tensor headers", files a .bin does
// not have; it comes from the checkpoint's header. The embedded model,
// stored as config.json and model.safetensors, keeps its line.
func TestPlanLlama2CSaysItsSource(t *testing.T) {
	out, errs, code := runHsdb(t, "plan", "--model", "../../testdata/stories260K/stories260K.bin")
	if code != 0 || !strings.Contains(out, "LlamaForCausalLM at --tp 1, from the llama2.c checkpoint's header; 4096 tokens\n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want the llama2.c header as the source", code, out, errs)
	}
	out, errs, code = runHsdb(t, "plan")
	if code != 0 || !strings.Contains(out, "from config.json and the checkpoint's tensor headers; 4096 tokens\n") {
		t.Errorf("embedded: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
