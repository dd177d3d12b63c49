package repl

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
)

func runScript(t *testing.T, tp int, script string, jsonOut bool) (int, string, string) {
	t.Helper()
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Run(hsdbg.NewLocal(hsdbg.New(e)), RunConfig{Script: script, JSON: jsonOut, Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestScripts runs testdata/tp1.hsdb and tp2.hsdb (every command once) as
// `hsdb -x` does and checks what they print at each world size.
func TestScripts(t *testing.T) {
	for _, tc := range []struct {
		tp     int
		script string
		want   []string
	}{
		{1, "testdata/tp1.hsdb", []string{"world size         1", "0     [10, 64]  f32    replicated", "rank 0: replicated\none rank: nothing to compare", "(absmax(output) > 0: true on rank 0)"}},
		{2, "testdata/tp2.hsdb", []string{"world size         2", "1     [10, 64]  f32    replicated", "0-1    equal", "sum   [10, 64]  f32    full", "(absmax(output) > 0: true on ranks 0,1)"}},
	} {
		code, out, errs := runScript(t, tc.tp, tc.script, false)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", tc.script, code, out, errs)
		}
		want := append(tc.want,
			"(hsdb) run\nStopped at model.layers.2 (LlamaDecoderLayer)  step 0 (prefill)  tokens 10",
			"model.layers.2 residual  step 0 (prefill)  rows 7:9 (seq 1)",
			"[until layers.3.mlp.down_proj; breakpoint 2 (absmax(output) > 0: true on rank",
			"display 1: model.layers.2 residual",
			"Finished: prefill",
			"Stopped at lm_head (ParallelLMHead)  step 1 (decode)  tokens 2 (seq 0: 1, seq 1: 1)",
			"Finished: 2 decode steps",
			"Finished: 1 decode step\n",
			"trace [3]   model.embed_tokens (VocabParallelEmbedding)  partial [2, 64], hidden_states [2, 64]",
			"(hsdb) echo done\ndone\n")
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q", tc.script, w)
			}
		}
		if strings.Contains(out, "error") {
			t.Errorf("%s printed an error:\n%s", tc.script, out)
		}
	}
}

// TestScriptStopsAtFirstError: the failing command is reported with file
// and line, nothing after it runs, and the exit status is 1.
func TestScriptStopsAtFirstError(t *testing.T) {
	code, out, _ := runScript(t, 1, "testdata/failing.hsdb", false)
	if code != 1 || !strings.Contains(out, "error: testdata/failing.hsdb:3: the forward pass is not stopped at a site") || strings.Contains(out, "never printed") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestScriptErrorsContinue: with `set errors continue` every error is
// reported, the script runs to its end, and the exit status is still 1.
func TestScriptErrorsContinue(t *testing.T) {
	code, out, _ := runScript(t, 1, "testdata/continue.hsdb", false)
	if code != 1 || strings.Count(out, "error: ") != 2 || !strings.Contains(out, "reached the end") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestScriptJSON: --json prints one JSON object per result, errors as
// {"command", "error"}; the stop of `run` carries the same fields as the
// text line.
func TestScriptJSON(t *testing.T) {
	code, out, errs := runScript(t, 2, "testdata/tp2.hsdb", true)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	kinds := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Command string          `json:"command"`
			Kind    string          `json:"kind"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		kinds[m.Kind]++
		if m.Kind == "stop" && m.Command == "run" {
			var st client.Stop
			json.Unmarshal(m.Result, &st)
			if st.Site != "model.layers.2" || st.Tokens != 10 || len(st.SeqLens) != 2 || st.Reasons[0] != "breakpoint 1" {
				t.Fatalf("stop %+v", st)
			}
		}
	}
	for _, k := range []string{"model", "batch", "breakpoint", "stop", "print", "values", "hist", "top", "ranks", "backtrace", "done", "trace", "tree", "layers", "sites", "memory", "ranks", "options", "echo"} {
		if kinds[k] == 0 {
			t.Errorf("no %q result in JSON output (%v)", k, kinds)
		}
	}
}

// TestReadmeReferenceUpToDate fails when README.md's command reference
// differs from the command table: run `go generate ./repl`.
func TestReadmeReferenceUpToDate(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := SpliceReference(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(b) {
		t.Fatal("README.md's command reference is out of date: run `go generate ./repl`")
	}
}
