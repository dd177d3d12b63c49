package debug

import (
	"errors"
	"testing"

	"hsdb/inspect/client"
)

// FuzzParseCond: breakpoint and watch conditions (seeds: TestCondEval's
// and TestCondErrors' conditions and case 25's 1e400) parsed for a
// breakpoint and for a watch of residual, then evaluated against
// TestCondEval's fake site: an error wrapping client.ErrCond, or a
// condition that evaluates without panicking.
func FuzzParseCond(f *testing.F) {
	for _, s := range []string{"absmax(residual) > 1e4", "std(hidden_states) == 0", "rank == 3 && absmax(residual) < 1e4",
		"not nan or rank != 3", "-mean(hidden_states) + 2 * 3 / 2", "(layer + 1) * tokens", "!(rank == 3) || inf",
		"absmax(stream) > 1e400", "absmax > 500", "1 < rank < 3", "(rank == 1", "absmx(x) > 1", "rank = 3", "é > 1"} {
		f.Add(s)
	}
	env := fakeEnv{"residual": {AbsMax: 2e4, Count: 10}, "hidden_states": {Std: 0, Mean: 1, Count: 4}, "": {NaN: 1, Count: 1}}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 1<<12 {
			return
		}
		for _, watched := range []string{"", "residual"} {
			c, err := ParseCond(src, watched)
			if err != nil {
				if !errors.Is(err, client.ErrCond) {
					t.Fatalf("%q: error of no kind: %v", src, err)
				}
				continue
			}
			c.eval(env)
			c.Tensors()
		}
	})
}
