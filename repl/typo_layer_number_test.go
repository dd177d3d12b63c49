package repl

import (
	"bytes"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestTypoHintLayerWrittenWithZero: layers.01.mlp matches no site (a site
// is layers.1.mlp), and was answered "layer 1 has no mlp, layers 0-4 have
// one", false of the embedded model, whose every layer has an mlp (`info
// sites`); the layer hint read 01 as 1. It is answered with the site
// one letter away, layers.1.mlp, and says nothing of layer 1 lacking one.
func TestTypoHintLayerWrittenWithZero(t *testing.T) {
	e, err := engine.Open("", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
	t.Cleanup(f.Close)
	for _, c := range []struct{ line, want string }{
		{"break layers.01.mlp", "; did you mean layers.1.mlp?"},
		{"break model.layers.001.mlp", "; did you mean model.layers.1.mlp?"},
	} {
		err := f.Term.Exec(c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "has no mlp") {
			t.Errorf("%s: %v; want %q and no 'has no mlp'", c.line, err, c.want)
		}
	}
}
