package repl

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/llama2c"
	"hsdb/engine/model"
	"hsdb/engine/tokenizer"
	hsdbg "hsdb/inspect/debug"
)

// newFakeWith is newFake on stories260K with the embedding of token 1
// changed by edit (to plant NaN or Inf in the forward pass).
func newFakeWith(t *testing.T, tp int, edit func(emb []float32)) *fakeTerm {
	t.Helper()
	ck, err := llama2c.Read(storiesBin)
	if err != nil {
		t.Fatal(err)
	}
	edit(ck.Tensors["model.embed_tokens.weight"].F32())
	e, err := engine.LoadSource(storiesBin, ck.ConfigJSON(), &model.MapSource{Name: storiesBin, Tensors: ck.Tensors}, engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	s := hsdbg.New(e)
	if s.Tok, err = tokenizer.LoadLlama2C(storiesTok); err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	f := newFakeOn(t, s, buf)
	t.Cleanup(f.Close)
	return f
}

// TestJSONNaNAndInf: with a NaN and an Inf planted in token 1's embedding
// (columns 0 and 1 of [512, 64]), --json prints the values as the strings
// "NaN" and "Inf" where the text prints NaN and +Inf, and the NaN/Inf
// counts of print; no result fails to encode.
func TestJSONNaNAndInf(t *testing.T) {
	f := newFakeWith(t, 1, func(emb []float32) {
		emb[1*64+0] = float32(math.NaN())
		emb[1*64+1] = float32(math.Inf(1))
		emb[1*64+2] = float32(math.Inf(-1))
	})
	f.Exec("input ids 1,403,407")
	f.Exec("break embed_tokens")
	f.Exec("run")
	f.AssertExec("print hidden_states[0, :4]", "0: [NaN, +Inf, -Inf, ")
	res := f.jsonExec("print hidden_states[0, :4]")
	row := res[0]["result"].(map[string]any)["ranks"].([]any)[0].(map[string]any)["values"].([]any)[0].([]any)
	if row[0] != "NaN" || row[1] != "Inf" || row[2] != "-Inf" {
		t.Fatalf("values row %v, want NaN, Inf, -Inf first", row)
	}
	if _, ok := row[3].(float64); !ok {
		t.Fatalf("finite value %v is not a number", row[3])
	}
	// Every data command encodes; print's counts are those planted.
	for _, cmd := range []string{"print hidden_states", "hist hidden_states", "top hidden_states 3", "ranks hidden_states", "bt"} {
		for _, m := range f.jsonExec(cmd) {
			if e, ok := m["error"]; ok {
				t.Fatalf("%s: %v", cmd, e)
			}
		}
	}
	st := f.jsonExec("print hidden_states")[0]["result"].(map[string]any)["ranks"].([]any)[0].(map[string]any)
	if st["nan"].(float64) != 1 || st["inf"].(float64) != 2 || st["count"].(float64) != 3*64 {
		t.Fatalf("stats %v: want nan 1, inf 2, count 192", st)
	}
}

// TestJSONErrorHasCommandLine: an error object names the command line that
// failed (in a script, too) and its message has no doubled prefix.
func TestJSONErrorHasCommandLine(t *testing.T) {
	f := newFake(t, 1)
	f.opts.json = true
	f.buf.Reset()
	err := f.RunScript(strings.NewReader("echo one\nfrobnicate now\n"), "stdin")
	if err == nil {
		t.Fatal("script with an unknown command succeeded")
	}
	lines := strings.Split(strings.TrimSpace(f.buf.String()), "\n")
	var m map[string]string
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatal(err)
	}
	if m["command"] != "frobnicate now" || m["error"] != `stdin:2: unknown command "frobnicate": `+"`help`"+` lists the commands` {
		t.Fatalf("error object %v", m)
	}
	// In a sourced script the failing line is named, not the source line.
	p := t.TempDir() + "/inner.hsdb"
	writeFile(t, p, "echo in\nprint nothing\n")
	f.buf.Reset()
	f.RunScript(strings.NewReader("source "+p+"\n"), "stdin")
	lines = strings.Split(strings.TrimSpace(f.buf.String()), "\n")
	m = nil
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil || len(lines) != 2 {
		t.Fatalf("%v: %q", err, lines)
	}
	if m["command"] != "print nothing" || !strings.HasPrefix(m["error"], p+":2: ") {
		t.Fatalf("nested error object %v", m)
	}
}

// TestJSONEmptyListsNotNull: ranks at --tp 1 has "pairs": [] and a run
// without decode steps "generated": [[], []] (one empty list per
// sequence).
func TestJSONEmptyListsNotNull(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.opts.json = true
	f.buf.Reset()
	if err := f.Term.Exec("run"); err != nil {
		t.Fatal(err)
	}
	if out := f.buf.String(); !strings.Contains(out, `"generated":[[],[]]`) {
		t.Fatalf("run: %s", out)
	}
	f.opts.json = false
	f.Exec("break layers.0")
	f.Exec("run")
	f.opts.json = true
	f.buf.Reset()
	if err := f.Term.Exec("ranks stream"); err != nil {
		t.Fatal(err)
	}
	if out := f.buf.String(); !strings.Contains(out, `"shards":["replicated"],"pairs":[]`) {
		t.Fatalf("ranks: %s", out)
	}
}

// TestJSONValueRules: the encoder's rules on a hand-made value, compared
// with the exact text they imply.
func TestJSONValueRules(t *testing.T) {
	type inner struct {
		A float64 `json:"a"`
		B float32 `json:"b"`
		C string  `json:"c"`
	}
	type outer struct {
		inner
		C     string            `json:"c"` // hides inner.C
		D     []int             `json:"d"`
		E     []int             `json:"e,omitempty"`
		F     *float64          `json:"f"`
		G     map[string]int    `json:"g"`
		H     [][]float64       `json:"h"`
		I     float64           `json:"-"`
		J     map[string]string `json:"j"`
		hide  int
		Plain bool
	}
	v := outer{inner: inner{A: math.Inf(-1), B: 0.1, C: "inner"}, C: "outer", H: [][]float64{{math.NaN(), 1.5}, nil},
		J: map[string]string{"z": "1", "a": "2"}, hide: 3}
	b, err := marshalResult(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":"-Inf","b":0.1,"c":"outer","d":[],"f":null,"g":{},"h":[["NaN",1.5],[]],"j":{"a":"2","z":"1"},"plain":false}` // an untagged field: its name in snake_case
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}
