package debug

import (
	"fmt"
	"math"

	"hsdb/engine"
)

// argmax returns each logits row's greedy token (engine.Sampler at
// temperature 0: lowest id on ties, as llama2.c's sample_argmax) and, for
// rows holding NaN or Inf, a note naming the sequence: such a row has no
// meaningful next token.
func argmax(l *engine.Logits) ([]int32, []string) {
	g := engine.NewSampler(0, 0)
	out := make([]int32, len(l.Rows))
	var bad []string
	for i := range out {
		row := l.Row(i)
		out[i] = g.Sample(row)
		n := 0
		for _, v := range row {
			if v != v || math.IsInf(float64(v), 0) {
				n++
			}
		}
		if n > 0 {
			bad = append(bad, fmt.Sprintf("seq %d: the logits hold %d NaN/Inf of %d, so its next token %d means nothing (break ... if nan finds where they start)", i, n, len(row), out[i]))
		}
	}
	return out, bad
}
