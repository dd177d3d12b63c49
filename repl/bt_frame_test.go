package repl

import (
	"strings"
	"testing"
)

// TestBacktraceAfterUp: `bt` shows the whole call chain at the stop
// whichever frame `up`/`frame` looks at (help bt: "the call chain at the
// stop"; gdb's bt likewise): after `up` from model.layers.2.mlp it still
// starts at the stopped site #0 with its outputs, and the decoder layer's
// inputs are not shown as its outputs.
func TestBacktraceAfterUp(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2.mlp")
	f.AssertExec("run", "Stopped at model.layers.2.mlp ")
	want := f.AssertExec("bt", "#0  model.layers.2.mlp  LlamaMLP  in: [10, 64]", "out: input [10, 64], output [10, 64]")
	f.AssertExec("up", "#1  model.layers.2  LlamaDecoderLayer")
	got := f.AssertExec("bt", "#0  model.layers.2.mlp  LlamaMLP")
	if got != want || strings.Contains(got, "out: input [10, 64], input_residual") {
		t.Fatalf("bt after up:\n%s\nwant the chain at the stop:\n%s", got, want)
	}
	f.AssertExec("frame", "#1  model.layers.2  LlamaDecoderLayer") // bt does not move the selected frame
}

// TestBacktraceInnermostFirst: `bt` numbers frames as gdb does, the
// innermost (where execution stopped) #0 and counting outward; before,
// #0 was the root model object and the stopped site had the largest
// number. The chain is derived by hand from stories260K's module tree
// (model > model.layers.1 > self_attn > o_proj, under LlamaForCausalLM);
// `up` moves to #1, the stopped site's parent, `down` back to #0, and
// `frame N` takes the same numbers.
func TestBacktraceInnermostFirst(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1.self_attn.o_proj")
	f.AssertExec("run", "Stopped at model.layers.1.self_attn.o_proj ")
	want := []string{
		"#0  model.layers.1.self_attn.o_proj  RowParallelLinear  in: [10, 32]",
		"    out: input [10, 32], partial [10, 64], output [10, 64]",
		"#1  model.layers.1.self_attn  LlamaAttention  in: [10, 64]",
		"#2  model.layers.1  LlamaDecoderLayer  in: [10, 64], [10, 64]",
		"#3  model  LlamaModel",
		"#4  (root)  LlamaForCausalLM",
	}
	out := f.Exec("bt")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("bt:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	for i := range want {
		if strings.TrimRight(lines[i], " ") != want[i] {
			t.Errorf("bt line %d: %q, want %q", i, lines[i], want[i])
		}
	}
	f.AssertExec("frame", "#0  model.layers.1.self_attn.o_proj  RowParallelLinear")
	f.AssertExec("up", "#1  model.layers.1.self_attn  LlamaAttention", "tensors: input [10, 64]")
	f.AssertExec("info frame", "#1  model.layers.1.self_attn  LlamaAttention")
	f.AssertExec("up 2", "#3  model  LlamaModel")
	f.AssertExec("down", "#2  model.layers.1  LlamaDecoderLayer", "tensors: input [10, 64], input_residual [10, 64]")
	f.AssertExec("down 2", "#0  model.layers.1.self_attn.o_proj  RowParallelLinear", "tensors: input [10, 32], partial [10, 64], output [10, 64]")
	f.AssertExec("frame 2", "#2  model.layers.1  LlamaDecoderLayer")
	for cmd, msg := range map[string]string{
		"frame 4": "frame 4: want 0 (the stopped site model.layers.1.self_attn.o_proj) to 3 (model); 4 is the root, which has no site",
		"up 2":    "up: 2 from frame #2 (model.layers.1): frame 4: want 0",
		"down 3":  "down: 3 from frame #2 (model.layers.1): frame -1: want 0",
	} {
		if err := f.Term.Exec(cmd); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", cmd, err, msg)
		}
	}
}
