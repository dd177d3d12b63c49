package repl

import (
	"path/filepath"
	"testing"
)

// TestDumpF16OverflowNamed: a stream edited to 1e5 (finite in f32, past
// f16's largest finite value 65504) and dumped with --dtype f16 was
// refused as "hidden_states.1 has 0 NaN and 1 Inf", as though the forward
// pass had overflowed; the refusal now says the conversion to f16 made
// the value infinite, where it is, and that bf16 or f32 hold it. bf16
// (max ~3.4e38) writes the same capture.
func TestDumpF16OverflowNamed(t *testing.T) {
	f := newFake(t, 1)
	dir := t.TempDir()
	f.Exec(batchCmd)
	f.Exec("capture layers 1")
	f.Exec("break layers.1")
	f.AssertExec("run", "Stopped at model.layers.1 ")
	f.Exec("set var stream[1, 2] = 100000")
	f.Exec("delete")
	f.AssertExec("continue", "Finished: prefill")
	f.AssertError("dump "+filepath.Join(dir, "a")+" --dtype f16", "hidden_states.1: 1 finite value past f16's range became Inf in the conversion to f16 (largest |x| 100000 at token 1, channel 2); the captured values are finite")
	f.AssertExec("dump "+filepath.Join(dir, "b")+" --dtype bf16", "bf16")
}
