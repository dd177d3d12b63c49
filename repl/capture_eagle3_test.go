package repl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// llama8 is the llama fixture grown to 8 decoder layers (layers 3-7 copies
// of layers 0-2, in turn), deep enough for EAGLE-3's four distinct ids.
func llama8(t *testing.T) string {
	t.Helper()
	f, err := safetensors.Open("../testdata/hf/llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	extra := map[string]*tensor.Tensor{}
	for _, n := range f.Names() {
		rest, ok := strings.CutPrefix(n, "model.layers.")
		if !ok {
			continue
		}
		var l int
		var tail string
		if _, err := fmt.Sscanf(strings.Replace(rest, ".", " ", 1), "%d %s", &l, &tail); err != nil {
			t.Fatal(err)
		}
		x, err := f.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		for k := l + 3; k < 8; k += 3 {
			extra[fmt.Sprintf("model.layers.%d.%s", k, tail)] = x
		}
	}
	dir := enginetest.CopyHF(t, "../testdata/hf/llama", nil, extra)
	var cfg map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["num_hidden_layers"] = 8
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCaptureLayersEagle3: README names eagle3 as hsdb capture's default
// layers, and `capture layers eagle3` in the debugger was refused ("layer
// \"eagle3\" is not a non-negative integer"). It takes them now, as the
// job does. By hand for 8 layers: hsdb layers 1, 8/2-1, 8-4, 8-1 = 1, 3,
// 4, 7, which `dump --format speculators` writes as speculators' own
// EAGLE-3 ids 2, 8/2, 8-3, 8 = 2, 4, 5, 8. stories260K's 5 layers give
// 1, 1, 1, 4: refused, naming the clash.
func TestCaptureLayersEagle3(t *testing.T) {
	f := openFake(t, llama8(t), engine.Options{})
	f.AssertExec("capture layers eagle3", "hidden_states.1 ", "hidden_states.3 ", "hidden_states.4 ", "hidden_states.7 ")
	f.Exec("input ids 1,5,7,9")
	f.Exec("run")
	f.AssertExec("dump "+filepath.Join(t.TempDir(), "s")+" --format speculators", "speculators ids 2,4,5,8 (hsdb layers 1,3,4,7)")
	s := newFake(t, 1)
	s.AssertError("capture layers eagle3", "capture layers eagle3: ")
	s.AssertError("capture layers eagle3", "too few layers for EAGLE-3's spread")
	// In the debugger's words (by hand, 5 layers: 1, 1, 1, 4; keep 1 and 4,
	// add the deepest unused): no --layers flag, which the REPL has not.
	for _, want := range []string{"eagle3 is hsdb layers 1,1,1,4 for 5 decoder layers", "(hsdb id 1 comes twice)", "e.g. capture layers 1,2,3,4"} {
		s.AssertError("capture layers eagle3", want)
	}
	if err := s.Term.Exec("capture layers eagle3"); err == nil || strings.Contains(err.Error(), "--layers") {
		t.Errorf("capture layers eagle3: %v, want no --layers in the debugger", err)
	}
	// A 3-layer model cannot hold 4 distinct layers: the refusal asked to
	// "name 4 distinct layers in 0..2". By hand: 1, 3/2-1, 3-4, 3-1 =
	// 1, 0, -1, 2; every layer it has, 0,1,2, is the example.
	h := newHFFake(t, 1)
	for _, want := range []string{"eagle3 is hsdb layers 1,0,-1,2 for 3 decoder layers", "name distinct layers in 0..2, 4 of them where the model has that many", "e.g. capture layers 0,1,2"} {
		h.AssertError("capture layers eagle3", want)
	}
	if err := h.Term.Exec("capture layers eagle3"); err == nil || strings.Contains(err.Error(), "name 4 distinct layers in 0..2") {
		t.Errorf("capture layers eagle3 on 3 layers: %v, want no impossible request for 4 layers in 0..2", err)
	}
}
