package repl

import (
	"bytes"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestTypoHintLayersWordMistyped: a site whose "layers" is mistyped
// (layer.1, singular; layrs.1; model.layer.2.mlp) matched no site and got
// no suggestion, although README promises the nearest names for a
// mistyped site and each is one letter from a site of the layer it names;
// the hint looked for a layer number only after "layers." and so offered
// only the sites outside any layer. Each is now answered with that site.
func TestTypoHintLayersWordMistyped(t *testing.T) {
	e, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
	t.Cleanup(f.Close)
	for _, c := range []struct{ line, want string }{
		{"break layer.1", "; did you mean layers.1?"},
		{"break layrs.1", "; did you mean layers.1?"},
		{"break model.layer.2.mlp", "; did you mean model.layers.2.mlp?"},
		{"break lyers.1.self_attn", "; did you mean layers.1.self_attn?"},
	} {
		if err := f.Term.Exec(c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.line, err, c.want)
		}
	}
}
