package repl

import (
	"path/filepath"
	"testing"
)

// TestCheckLayersOutOfRangeREPL: the debugger's `check DIR --layers 6,7`
// on stories260K (5 decoder layers in its llama2.c header: hsdb layers
// 0..4) reported a layer-count failure as if the file were at fault; it is
// now one error naming the ids, the layer count and the range, with the
// model run or not (--no-model), and for diff.
func TestCheckLayersOutOfRangeREPL(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 0,1")
	f.Exec("run")
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec("dump " + dir)
	want := "--layers out of range: layers 6,7 are outside the model: the model has 5 decoder layers, and --layers takes hsdb layers 0..4"
	f.AssertError("check "+dir+" --layers 6,7", want)
	f.AssertError("check "+dir+" --layers 6,7 --no-model", want)
	f.AssertError("diff "+dir+" --layers 7,6", "layers 7,6 are outside the model")
}
