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
		"frame 4": "^frame 4: want 0 (the stopped site model.layers.1.self_attn.o_proj) to 3 (model); 4 is the root, which has no site",
		"up 2":    "up 2: frame #2 (model.layers.1) is 1 below the outermost frame #3 (model): you can go up at most 1",
		"down 3":  "down 3: frame #2 (model.layers.1) is 2 above the innermost frame #0: you can go down at most 2 (frame 0 goes there)",
	} {
		err := f.Term.Exec(cmd)
		if m, start := strings.CutPrefix(msg, "^"); start { // the whole message starts so (no "frame: frame 4")
			if err == nil || !strings.HasPrefix(err.Error(), m) {
				t.Errorf("%s: %v, want it to start %q", cmd, err, m)
			}
		} else if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", cmd, err, msg)
		}
	}
}

// TestFrameEndsSaid: bare `down` at #0 and bare `up` at the outermost frame
// with a site are refused as gdb refuses them ("Bottom (innermost) frame
// selected; you cannot go down." / "Initial frame selected; you cannot go
// up."), naming the frame; before, down at #0 said "1 from frame #0 (...):
// frame -1: want 0 (...) to 3 (model); 4 is the root, which has no site",
// a range error for a level the user never typed. The chain is stories260K's
// (TestBacktraceInnermostFirst): o_proj #0, self_attn #1, layers.1 #2,
// model #3, the root LlamaForCausalLM #4 without a site. The frame looked
// at does not move on a refusal. At lm_head the stopped site is itself the
// outermost frame (root > lm_head), so up is refused at #0.
func TestFrameEndsSaid(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.1.self_attn.o_proj")
	f.AssertExec("run", "Stopped at model.layers.1.self_attn.o_proj ")
	refused := func(cmd, want string) {
		t.Helper()
		err := f.Term.Exec(cmd)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", cmd, err, want)
		}
	}
	refused("down", "down: bottom (innermost) frame #0 selected (model.layers.1.self_attn.o_proj, RowParallelLinear, the site the pass stopped at): you cannot go down")
	f.AssertExec("frame", "#0  model.layers.1.self_attn.o_proj  RowParallelLinear")
	refused("up 4", "up 4: frame #0 (model.layers.1.self_attn.o_proj) is 3 below the outermost frame #3 (model): you can go up at most 3")
	f.AssertExec("up 3", "#3  model  LlamaModel")
	refused("up", "up: outermost frame #3 selected (model, LlamaModel; above it only the root LlamaForCausalLM, which has no site): you cannot go up")
	refused("up 1", "up 1: outermost frame #3 selected (model, LlamaModel; above it only the root LlamaForCausalLM, which has no site): you cannot go up")
	f.AssertExec("frame", "#3  model  LlamaModel")
	f.AssertExec("down 3", "#0  model.layers.1.self_attn.o_proj")
	// The largest count int holds, from a frame above #0: cur.Level + n
	// wrapped to frame -9223372036854775808 (the range error of a level
	// nobody typed).
	f.AssertExec("up", "#1  model.layers.1.self_attn")
	refused("up 9223372036854775807", "up 9223372036854775807: frame #1 (model.layers.1.self_attn) is 2 below the outermost frame #3 (model): you can go up at most 2")
	refused("down 9223372036854775807", "down 9223372036854775807: frame #1 (model.layers.1.self_attn) is 1 above the innermost frame #0: you can go down at most 1 (frame 0 goes there)")
	f.AssertExec("down", "#0  model.layers.1.self_attn.o_proj")

	f.Exec("delete")
	f.Exec("break lm_head")
	f.AssertExec("run", "Stopped at lm_head ")
	refused("up", "up: outermost frame #0 selected (lm_head, ParallelLMHead; above it only the root LlamaForCausalLM, which has no site): you cannot go up")
	refused("down", "down: bottom (innermost) frame #0 selected (lm_head, ParallelLMHead, the site the pass stopped at): you cannot go down")
}
