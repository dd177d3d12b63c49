package repl

import (
	"strings"
	"testing"
)

// TestBacktraceAfterUp: `bt` shows the whole call chain at the stop
// whichever frame `up`/`frame` looks at (help bt: "the call chain at the
// stop"; gdb's bt likewise): after `up` from model.layers.2.mlp it still
// ends at the stopped site #3 with its outputs, and the decoder layer's
// inputs are not shown as its outputs.
func TestBacktraceAfterUp(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2.mlp")
	f.AssertExec("run", "Stopped at model.layers.2.mlp ")
	want := f.AssertExec("bt", "#3        model.layers.2.mlp  LlamaMLP  in: [10, 64]", "out: input [10, 64], output [10, 64]")
	f.AssertExec("up", "#2  model.layers.2  LlamaDecoderLayer")
	got := f.AssertExec("bt", "#3        model.layers.2.mlp  LlamaMLP")
	if got != want || strings.Contains(got, "out: input [10, 64], input_residual") {
		t.Fatalf("bt after up:\n%s\nwant the chain at the stop:\n%s", got, want)
	}
	f.AssertExec("frame", "#2  model.layers.2  LlamaDecoderLayer") // bt does not move the selected frame
}
