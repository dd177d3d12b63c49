package repl

import (
	"bytes"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestTypoHints: a mistyped command or site is answered with the nearest
// name (one letter dropped or swapped: prnt → print, brek → break,
// self_atn → self_attn, lm_haed → lm_head); the DeepSeek-V3 user's
// kv_a_proj is HF's kv_a_proj_with_mqa, which vLLM fuses into
// fused_qkv_a_proj (not kv_b_proj, one letter away); a layer the model
// does not have gets no other layer's site offered, and an HF module the
// model lacks (MLA has no q_proj) no look-alike.
func TestTypoHints(t *testing.T) {
	e, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
	t.Cleanup(f.Close)
	f.AssertError("prnt stream", `unknown command "prnt" (did you mean print?)`)
	f.AssertError("brek layers.1", `unknown command "brek" (did you mean break?)`)
	f.AssertError("help prnt", `help: unknown command "prnt" (did you mean print?)`)
	f.AssertError("break layers.1.self_atn", "; did you mean layers.1.self_attn?")
	f.AssertError("break model.layers.1.mlp.gat", "; did you mean model.layers.1.mlp.gate?")
	f.AssertError("break lm_haed", "; did you mean lm_head?")
	f.AssertError("break layers.1.self_attn.kv_a_proj", "HF's kv_a_proj_with_mqa is fused into vLLM's fused_qkv_a_proj here: layers.1.self_attn.fused_qkv_a_proj")
	for _, line := range []string{"break layers.7.mlp", "break layers.1.self_attn.q_proj", "break layers.1.self_attn.kv_a_proj"} {
		err := f.Term.Exec(line)
		if err == nil || bytes.Contains([]byte(err.Error()), []byte("did you mean")) {
			t.Errorf("%s: %v; want an error offering no look-alike", line, err)
		}
	}
}

// TestLoadSaysModelFlag: gdb's `load` and `file` (the design sketch lists
// `load`) answered only "unknown command" with no hint; the model is
// chosen when hsdb starts, which the error now says.
func TestLoadSaysModelFlag(t *testing.T) {
	f := newFake(t, 1)
	for _, line := range []string{"load testdata/hf/llama", "file testdata/hf/llama"} {
		f.AssertError(line, "hsdb loads its model when it starts: quit and run hsdb --model DIR [--tp N]")
	}
}
