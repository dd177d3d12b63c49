package main

import (
	"strings"
	"testing"
)

const capDir = "../../testdata/captures/"

// TestCheckExitCodes: check exits 0 on a good capture, 1 on a broken one
// (with the diagnosis printed), 2 on input it cannot read (a pickle naming
// posix.system, a missing path).
func TestCheckExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"check", capDir + "good_speculators.pt", "--model", "../../testdata/hf/llama", "--layers", "0,1,2"}, 0,
			[]string{"pass  matches model", "pass  shape"}},
		{[]string{"check", "--model", "../../testdata/hf/llama", "--layers", "0,1,2", capDir + "shifted_by_one.pt"}, 1,
			[]string{"FAIL  matches model", "labelled layer 1, matches stream of layer 0 (cos 1.000000"}},
		{[]string{"check", capDir + "ds_latent_flattened.pt", "--model", "../../testdata/hf/deepseek_v3", "--layers", "3", "--seq-lens", "12,7"}, 1,
			[]string{"19 tensors of [40]: 19 = 12 + 7 (tokens of sequences 0 and 1, flattened); 40 = kv_lora_rank, not hidden_size 96"}},
		{[]string{"check", capDir + "evil_global.pt"}, 2, []string{"posix.system"}},
		{[]string{"check", capDir + "no_such_file.pt"}, 2, []string{"no such file"}},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", c.args, code, c.code, out, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out+errs, w) {
				t.Errorf("%v: output lacks %q:\n%s%s", c.args, w, out, errs)
			}
		}
	}
}

// TestCheckDirectory: the captures directory as a whole (no manifest):
// every file is checked, unreadable ones counted; some are broken: exit 1.
func TestCheckDirectory(t *testing.T) {
	out, _, code := runHsdb(t, "check", capDir, "--model", "../../testdata/hf/llama", "--layers", "0,1,2")
	if code != 1 || !strings.Contains(out, "files:") || !strings.Contains(out, "1 unreadable") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestDiff: diff names the first layer that departs from hsdb (the
// off-by-one capture departs at layer 0, which holds the embeddings) and
// exits 1; a good capture exits 0.
func TestDiff(t *testing.T) {
	out, errs, code := runHsdb(t, "diff", capDir+"shifted_by_one.pt", "--model", "../../testdata/hf/llama", "--layers", "0,1,2")
	if code != 1 || !strings.Contains(out, "first departure: layer 0 (hidden_states[0]) from token 0") || !strings.Contains(out, "it matches embeddings") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runHsdb(t, "diff", capDir+"good_speculators_bf16.pt", "--model", "../../testdata/hf/llama", "--layers", "0,1,2")
	if code != 0 || !strings.Contains(out, "no departure") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	_, errs, code = runHsdb(t, "diff", capDir+"good_speculators.pt")
	if code != 2 || !strings.Contains(errs, "--model is required") {
		t.Fatalf("exit %d %s", code, errs)
	}
}
