package main

import (
	"strings"
	"testing"
)

// TestPlanAdviceFewerTokens: DeepSeek-V3 as released at --tp 8 holds
// about 84.5 GB of fp8 expert and attention weights per rank (by hand:
// 669.07e9 fp8 weights, the replicated q_a_proj and kv_a_proj_with_mqa
// counted on every rank, the rest split 8 ways), well within an H200's
// 141 GiB; at --max-tokens 163840 the activations and KV cache tip it
// over, and the refusal advised only "load fewer decoder layers with
// --load-layers A-B or use more devices". It now says the weights alone
// fit and names the token flags first; at --tp 1 (669 GB of weights on
// one device) it does not.
func TestPlanAdviceFewerTokens(t *testing.T) {
	const dir = "../../testdata/configs/deepseek-v3"
	out, errs, code := runHsdb(t, "plan", "--model", dir, "--tp", "8", "--max-tokens", "163840")
	if code != 1 || !strings.Contains(out, "fits: no, ") || !strings.Contains(out, "the weights alone fit, so plan fewer tokens (--max-tokens, --seqs, --seq-len), or load fewer decoder layers") {
		t.Errorf("--tp 8 --max-tokens 163840: exit %d (stderr %q):\n%s", code, errs, out)
	}
	out, errs, code = runHsdb(t, "plan", "--model", dir, "--tp", "1")
	if code != 1 || !strings.Contains(out, "fits: no, ") || strings.Contains(out, "weights alone fit") {
		t.Errorf("--tp 1: exit %d (stderr %q):\n%s", code, errs, out)
	}
}
