package repl

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// TestSnakeCase: untagged field names become snake_case JSON keys,
// acronyms kept whole.
func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"Site": "site", "MaxRelDiff": "max_rel_diff", "SHA256": "sha256", "HFIndex": "hf_index",
		"WorstRank": "worst_rank", "ID": "id", "InputSHA256": "input_sha256", "L2": "l2"} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// assertSnakeKeys fails on any object key of v (recursively) that is not
// lower-case snake_case.
func assertSnakeKeys(t *testing.T, where string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
				t.Errorf("%s: key %q is not snake_case", where, k)
			}
			assertSnakeKeys(t, where+"."+k, c)
		}
	case []any:
		for _, c := range x {
			assertSnakeKeys(t, where, c)
		}
	}
}

// TestCase22CaptureJSONKeys: cases/README.md case 22 — `capture layers 1`
// under --json lists its specs with snake_case keys (site, tensor, layer,
// key), as every other result; so do the other capture commands' results.
func TestCase22CaptureJSONKeys(t *testing.T) {
	f := newFake(t, 1)
	res := f.jsonExec("capture layers 1")
	specs := res[0]["result"].(map[string]any)["specs"].([]any)
	s0 := specs[0].(map[string]any)
	if s0["site"] != "model.layers.1" || s0["layer"] != float64(1) || s0["key"] != "hidden_states.1" {
		t.Fatalf("spec %v", s0)
	}
	f.Exec("input ids 1,403,407")
	for _, line := range []string{"capture", "run", "info model", "info break", "capture site layers.1.mlp output"} {
		for _, r := range f.jsonExec(line) {
			assertSnakeKeys(t, line, r)
		}
	}
}

// TestCase17CaptureSiteNotPerToken: case 17 — `capture site lm_head
// logits` (one row per sequence in a prefill: only the last token's
// logits are computed) and the MoE gate's tokens_per_expert (one count per
// expert) are refused at `capture site`; the layer captures asked for
// next run and dump as usual.
func TestCase17CaptureSiteNotPerToken(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("capture site lm_head logits", "lm_head logits is not one row per token (one row per sequence")
	f.AssertError("capture site lm_head input", "is not one row per token")
	f.AssertExec("capture layers 0,2")
	f.Exec("input ids 1,403,407 ; ids 1,400")
	f.Exec("run")
	dir := t.TempDir() + "/D"
	f.AssertExec("dump "+dir, "validated")

	e, err := engine.Open("../testdata/hf/deepseek_v3", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := newFakeEngine(t, e)
	d.AssertError("capture site layers.1.mlp.gate tokens_per_expert", "tokens_per_expert is not one row per token (one count per routed expert)")
	d.AssertExec("capture site layers.1.mlp.gate topk_ids") // [tokens, top_k]: per token
}

// newFakeEngine is newFake over an already opened engine (no tokenizer).
func newFakeEngine(t *testing.T, e *engine.Engine) *fakeTerm {
	t.Helper()
	buf := &bytes.Buffer{}
	f := &fakeTerm{Term: New(hsdbg.NewLocal(hsdbg.New(e)), buf, Config{}), t: t, buf: buf}
	t.Cleanup(f.Close)
	return f
}

// TestCase18DisplayAbsentTensor: case 18 — in a -x script, `display
// stream` at a stop in lm_head (which shows input and logits, not stream)
// registers the display with no error (the script goes on to echo), as
// `help display` says; the display prints at the next stop that shows
// stream.
func TestCase18DisplayAbsentTensor(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,2,3")
	f.Exec("break lm_head")
	f.Exec("break layers.1")
	f.Exec("run")
	f.Exec("continue")
	out := f.AssertExec("display stream", "display 1: print stream")
	if strings.Contains(out, "rank") {
		t.Fatalf("display printed a tensor lm_head does not show:\n%s", out)
	}
	f.AssertExec("echo next", "next")
	f.AssertExec("run", "display 1: ")
}

// TestCase23StopLineBigBatch: case 23 — a batch of 64 sequences (lengths
// 1..64 tokens of id 1, so 2080 tokens, shortest 1, longest 64) stops with
// a one-line account; `info batch` lists every sequence; a batch of two
// still lists both on the stop line.
func TestCase23StopLineBigBatch(t *testing.T) {
	f := newFake(t, 1)
	var seqs []string
	for n := 1; n <= 64; n++ {
		seqs = append(seqs, "ids "+strings.TrimSuffix(strings.Repeat("1,", n), ","))
	}
	f.Exec("input " + strings.Join(seqs, " ; "))
	f.Exec("break layers.2")
	out := f.AssertExec("run", "tokens 2080 in 64 sequences (shortest 1, longest 64; info batch lists them)")
	first := strings.SplitN(out, "\n", 2)[0]
	if !strings.HasPrefix(first, "Stopped at model.layers.2") || !strings.Contains(first, "[breakpoint 1]") {
		t.Fatalf("the stop line is not one line:\n%s", out)
	}
	list := f.AssertExec("info batch", "step 0 (prefill): 64 sequences, 2080 tokens", "  seq 0: 1 token [1]", "  seq 63: 64 tokens [1, 1,")
	if n := strings.Count(list, "\n  seq "); n != 64 {
		t.Fatalf("info batch lists %d sequences", n)
	}
	f.Exec("input ids 1,2,3 ; ids 1,5")
	f.AssertExec("run", "tokens 5 (seq 0: 3, seq 1: 2)")
}

// TestCase16CaptureArmedMidSequence: case 16 — `capture layers 1` after
// `run`, then `gen 5`: the capture holds only the generated tokens, not
// the prompt they continue, so `dump` refuses it (naming the sequence and
// the position it started at) and nothing is written for `check` to
// contradict; armed before `run`, the same session dumps a file `check`
// passes against the model.
func TestCase16CaptureArmedMidSequence(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(`input text "Once upon a time"`)
	f.Exec("run")
	f.Exec("capture layers 1")
	f.Exec("gen 5")
	dir := t.TempDir()
	f.AssertError("dump "+dir+"/x", "sequence 0: the capture was armed after its first")
	if _, err := os.Stat(dir + "/x"); !os.IsNotExist(err) {
		t.Fatalf("a dump was written: %v", err)
	}
	f.Exec("capture clear")
	f.Exec("capture layers 1")
	f.Exec("run")
	f.Exec("gen 5")
	f.AssertExec("dump "+dir+"/y", "validated")
	if out := f.AssertExec("check "+dir+"/y", "pass"); strings.Contains(out, "FAIL") {
		t.Fatalf("check of the dump:\n%s", out)
	}
}

// TestCase2And3DumpForceForeign: cases 2 and 3 as the REPL meets them —
// `dump f --force` onto an ordinary file and onto a directory holding
// notes.txt are refused, and both keep their contents.
func TestCase2And3DumpForceForeign(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("input ids 1,2,3")
	f.Exec("capture layers 1")
	f.Exec("run")
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/f", []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.AssertError("dump "+dir+"/f --force", "is a regular file")
	if err := os.Mkdir(dir+"/u", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/u/notes.txt", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.AssertError("dump "+dir+"/u --force", "has no hsdb manifest")
	if b, _ := os.ReadFile(dir + "/f"); string(b) != "data\n" {
		t.Fatalf("f holds %q", b)
	}
	if b, _ := os.ReadFile(dir + "/u/notes.txt"); string(b) != "mine" {
		t.Fatalf("u/notes.txt holds %q", b)
	}
}
