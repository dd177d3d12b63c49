package debug

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

type fakeEnv map[string]stats.Stats

func (f fakeEnv) stats(name string) (stats.Stats, bool) { s, ok := f[name]; return s, ok }
func (f fakeEnv) variable(name string) float64 {
	return map[string]float64{"rank": 3, "step": 0, "layer": 2, "tokens": 8}[name]
}

func fmtG(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }

// TestCondEval: values worked out by hand against a fake site whose
// residual has absmax 2e4 and hidden_states std 0.
func TestCondEval(t *testing.T) {
	env := fakeEnv{"residual": {AbsMax: 2e4, Count: 10}, "hidden_states": {Std: 0, Mean: 1, Count: 4}, "": {NaN: 1, Count: 1},
		"dead": {Count: 4, NaN: 4}}
	for src, want := range map[string]float64{
		"absmax(residual) > 1e4":                     1,
		"std(hidden_states) == 0":                    1,
		"rank == 3":                                  1,
		"rank == 3 && absmax(residual) < 1e4":        0,
		"not nan or rank != 3":                       0,
		"nan":                                        1,
		"-mean(hidden_states) + 2 * 3 / 2":           2,
		"(layer + 1) * tokens":                       24,
		"absmax(residual) / count(residual) >= 2000": 1,
		"!(rank == 3) || inf":                        0,
		// dead is all NaN: its std is undefined (NaN), so no comparison
		// with it holds, while its NaN count is 4.
		"std(dead) == 0": 0,
		"std(dead) != 0": 0,
		"nan(dead) == 4": 1,
	} {
		c, err := ParseCond(src, "")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got, ok := c.eval(env); !ok || got != want {
			t.Errorf("%s = %v %v, want %v", src, got, ok, want)
		}
	}
	// A tensor the site does not show makes the condition false.
	c, _ := ParseCond("absmax(stream) > 0", "")
	if _, ok := c.eval(env); ok {
		t.Error("missing tensor evaluated")
	}
	// In a watch, bare statistics read the watched tensor.
	c, _ = ParseCond("absmax > 500", "residual")
	if v, _ := c.eval(env); v != 1 || fmt.Sprint(c.Tensors()) != "[residual]" {
		t.Errorf("watch cond %v %v", v, c.Tensors())
	}
}

// TestCondErrors: each malformed condition gives one error with the column
// of the offending token.
func TestCondErrors(t *testing.T) {
	for src, want := range map[string]string{
		"":                        `condition "": column 1: empty condition`,
		"absmax(x) > ":            `condition "absmax(x) > ": column 13: expected a number, a name or '(', found end of condition`,
		"absmx(x) > 1":            `condition "absmx(x) > 1": column 1: unknown statistic "absmx" (want one of mean, std, min, max, absmax, l2, nan, inf, zeros, count)`,
		"mean > 1":                `condition "mean > 1": column 1: mean needs a tensor: mean(hidden_states)`,
		"rank = 3":                `condition "rank = 3": column 6: '=' is not an operator; compare with '=='`,
		"1 < rank < 3":            `condition "1 < rank < 3": column 10: comparisons do not chain; join them with &&`,
		"(rank == 1":              `condition "(rank == 1": column 11: expected ')' to close the '(' at column 1, found end of condition`,
		"rank == 1 2":             `condition "rank == 1 2": column 11: unexpected "2" after a complete condition`,
		"absmax(residual) > 1e4$": `condition "absmax(residual) > 1e4$": column 23: unexpected character '$'`,
		"foo > 1":                 `condition "foo > 1": column 1: unknown name "foo" (want a statistic mean, std, min, max, absmax, l2, nan, inf, zeros, count, or a name rank, step, layer, tokens)`,
	} {
		_, err := ParseCond(src, "")
		if err == nil || err.Error() != want || !errors.Is(err, client.ErrCond) {
			t.Errorf("%q:\n got %v\nwant %s", src, err, want)
		}
	}
}

func TestPattern(t *testing.T) {
	for pat, paths := range map[string][2][]string{
		"layers.*.mlp": {{"model.layers.0.mlp", "model.layers.4.mlp"}, {"model.layers.0", "model.layers.0.mlp.act_fn"}},
		"layers.2-3":   {{"model.layers.2", "model.layers.3"}, {"model.layers.1", "model.layers.4", "model.layers.2.mlp"}},
		"lm_head":      {{"lm_head"}, {"model.norm"}},
		"model":        {{"model"}, {"model.norm"}},
		"norm":         {{"model.norm"}, {"model.layers.0.input_layernorm"}},
	} {
		p, err := ParsePattern(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, yes := range paths[0] {
			if !p.Match(yes) {
				t.Errorf("%s should match %s", pat, yes)
			}
		}
		for _, no := range paths[1] {
			if p.Match(no) {
				t.Errorf("%s should not match %s", pat, no)
			}
		}
	}
	for _, bad := range []string{"layers..mlp", "layers.5-2", "layers.a-b", "lay$ers"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestIndexAndRange(t *testing.T) {
	idx, err := client.ParseIndex("3, :8")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := idx.Rows.Resolve(10, "row")
	c, _ := idx.Cols.Resolve(64, "column")
	if r != (client.Range{Lo: 3, Hi: 4}) || c != (client.Range{Lo: 0, Hi: 8}) {
		t.Fatalf("%v %v", r, c)
	}
	idx, _ = client.ParseIndex("-1")
	r, _ = idx.Rows.Resolve(10, "row")
	c, _ = idx.Cols.Resolve(64, "column")
	if r != (client.Range{Lo: 9, Hi: 10}) || c != (client.Range{Lo: 0, Hi: 64}) {
		t.Fatalf("%v %v", r, c)
	}
	if _, err := idx.Rows.Resolve(0, "row"); err == nil {
		t.Fatal("index into empty accepted")
	}
	if _, err := client.ParseIndex("1,2,3"); err == nil {
		t.Fatal("3-d index accepted")
	}
	if g, err := client.ParseRange("2:"); err != nil || g != (client.Range{Lo: 2, Hi: -1}) {
		t.Fatal(g, err)
	}
	if _, err := client.ParseRange("5:2"); err == nil {
		t.Fatal("empty range accepted")
	}
}
