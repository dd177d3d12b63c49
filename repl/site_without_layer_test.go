package repl

import (
	"bytes"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestSiteWithoutLayerHint: `break mlp.gate` on the DeepSeek-V3 fixture
// (4 layers, first_k_dense_replace 1: routers at layers 1-3) matched no
// site and said only "layers 0-3"; a DeepSeek user writing the module's
// name without its layer is now told it is a decoder layer's site, in
// which layers, and how to stop at all of them. A name no layer has gets
// no such hint.
func TestSiteWithoutLayerHint(t *testing.T) {
	e, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
	t.Cleanup(f.Close)
	f.AssertError("break mlp.gate", "; a decoder layer's site: layers.N.mlp.gate, N in 1-3 (break layers.*.mlp.gate stops at every one)")
	f.AssertError("break self_attn", "layers.N.self_attn, N in 0-3")
	f.AssertExec("break layers.*.mlp.gate", "(3 sites)")
	if err := f.Term.Exec("break mlp.router"); err == nil || strings.Contains(err.Error(), "decoder layer's site") {
		t.Errorf("break mlp.router: %v; want no layer hint", err)
	}
}
