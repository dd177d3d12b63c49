package repl

import (
	"strings"
	"testing"

	"hsdb/engine"
)

// TestInfoModelSaysEP: `info model` of a model loaded with --ep gave its
// world size and nothing of the expert split, so a session at --ep read
// as one at --moe tp (only `info ranks` told them apart). The DeepSeek-V3
// fixture (8 routed experts) at tp 2, with and without --ep; json
// carries expert_parallel.
func TestInfoModelSaysEP(t *testing.T) {
	for _, ep := range []bool{false, true} {
		f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 2, EP: ep})
		out := f.Exec("info model")
		if got := strings.Contains(out, "world size         2 (--ep: routed experts whole per rank, expert parallel)"); got != ep {
			t.Errorf("ep %v: info model says --ep: %v\n%s", ep, got, out)
		}
		res := f.jsonExec("info model")[0]["result"].(map[string]any)
		if res["expert_parallel"] != ep {
			t.Errorf("ep %v: json expert_parallel %v", ep, res["expert_parallel"])
		}
	}
}
