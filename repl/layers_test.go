package repl

import (
	"bytes"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	hsdbg "hsdb/inspect/debug"
)

// TestPartialLoadMessagesSayWhatIsLoaded: DeepSeek-V3's fixture has 4
// decoder layers (config.json num_hidden_layers); opened with --layers 2-3,
// a site outside them is refused naming layers 2-3 (not "0-1"), info model
// says only 2-3 of 0-3 are loaded, and run notes that the embeddings feed
// layer 2 directly.
func TestPartialLoadMessagesSayWhatIsLoaded(t *testing.T) {
	e, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{Layers: &model.LayerRange{First: 2, Last: 3}})
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	f := newFakeOn(t, hsdbg.New(e), buf)
	t.Cleanup(f.Close)
	const loaded = "this session loaded only decoder layers 2-3 of 0-3 (--load-layers 2-3)"
	f.AssertError("break layers.1", `"layers.1" matches no site of this model (layers 2-3; `)
	f.AssertError("break layers.1", loaded)
	f.AssertError("tree layers.0", loaded)
	f.AssertError("until layers.0", loaded)
	f.AssertExec("info model", "num_hidden_layers  4  loaded: only layers 2-3 of 0-3 (--load-layers 2-3); embeddings feed layer 2 directly")
	res := f.jsonExec("info model")[0]["result"].(map[string]any)["loaded_layers"].(map[string]any)
	if res["first"].(float64) != 2 || res["last"].(float64) != 3 || res["total"].(float64) != 4 || res["partial"] != true {
		t.Fatalf("loaded_layers %v", res)
	}
	f.Exec("input ids 1,2,3")
	const note = "note: only decoder layers 2-3 of 0-3 are loaded (--load-layers 2-3): the embeddings feed layer 2 directly"
	f.AssertExec("run", "Finished: prefill", note)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ", note)
	f.AssertError("until layers.1", loaded)
	// A full load says nothing of the kind.
	full, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sp := hsdbg.New(full).LoadedLayers(); sp.Partial || sp.String() != "layers 0-3" || sp.PartialNote() != "" {
		t.Fatalf("full load: %+v %q", sp, sp.PartialNote())
	}
}
