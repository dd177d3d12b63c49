package repl

import (
	"testing"
)

// TestSetVarAddendRemakesStream: at a decoder layer, `set var residual[0,
// 0] = 100` changed what the pass goes on with (vLLM's pair sums to it at
// the next layer) but `print stream` still showed the old sum. By hand:
// after the edits stream[0, 0] = hidden_states[0, 0] + 100 and stream[0,
// 1] = 100 + residual[0, 1] (float32 additions of the values printed
// before), on both ranks; and the next layer's fused add produces the
// same row: layers.3.input_layernorm's residual (= input + input_residual)
// equals the stream shown at the stop.
func TestSetVarAddendRemakesStream(t *testing.T) {
	f := newFake(t, 2)
	f.Exec("input ids 1,403")
	f.Exec("break layers.2")
	f.Exec("break layers.3.input_layernorm")
	f.Exec("run")
	vals := func(cmd string) [][]float64 {
		t.Helper()
		var out [][]float64
		for _, r := range f.jsonExec(cmd)[0]["result"].(map[string]any)["ranks"].([]any) {
			row := r.(map[string]any)["values"].([]any)[0].([]any)
			var v []float64
			for _, x := range row {
				v = append(v, x.(float64))
			}
			out = append(out, v)
		}
		return out
	}
	hs, res := vals("print hidden_states[0, 0:2]"), vals("print residual[0, 0:2]")
	f.Exec("set var residual[0, 0] = 100")
	f.Exec("set var hidden_states[0, 1] = 100")
	want := []float64{float64(float32(hs[0][0]) + 100), float64(100 + float32(res[0][1]))}
	got := vals("print stream[0, 0:2]")
	if len(got) != 2 {
		t.Fatalf("stream on %d ranks, want 2", len(got))
	}
	for r, row := range got {
		if row[0] != want[0] || row[1] != want[1] {
			t.Fatalf("rank %d: stream[0, 0:2] = %v after the edits, want %v", r, row, want)
		}
	}
	f.Exec("continue")
	next := vals("print residual[0, 0:2]")
	if next[0][0] != want[0] || next[0][1] != want[1] {
		t.Fatalf("layers.3's fused add gives %v, the stop showed %v", next[0], want)
	}
}
