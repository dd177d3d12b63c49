package repl

import (
	"strings"
	"testing"
)

// TestCheckEndsOnVerdict: the REPL's check and diff printed the report,
// whose last line is already the verdict, and then a bare "valid" or
// "invalid" (a file nothing could be compared in, which hsdb check calls
// "unreadable or nothing comparable", was "invalid"). The output now ends
// on the report's own verdict line, as hsdb check prints it: good.safetensors
// (the fixture generator's valid capture) is "valid"; reference.safetensors
// (HF's reference values: no hidden-state entries to compare) is
// "unreadable or nothing comparable".
func TestCheckEndsOnVerdict(t *testing.T) {
	f := newHFFake(t, 1)
	for _, c := range []struct{ cmd, last string }{
		{"check ../testdata/captures/good.safetensors --no-model", "  verdict: valid"},
		{"diff ../testdata/captures/good.safetensors", "  verdict: valid"},
		{"check ../testdata/captures/reference.safetensors", "  verdict: unreadable or nothing comparable"},
	} {
		out := strings.TrimRight(f.Exec(c.cmd), "\n")
		lines := strings.Split(out, "\n")
		if got := lines[len(lines)-1]; got != c.last {
			t.Errorf("%s: last line %q, want %q\n%s", c.cmd, got, c.last, out)
		}
	}
}

// TestDumpFormatSummary: `dump DIR --format speculators` (or specforge)
// said "dumped … : layers 0,2 (stream); sites model.embed_tokens:…, bf16",
// as for hsdb's own files, though it wrote a trainer's files with that
// trainer's ids; hsdb capture names them. The REPL now says the same: the
// embeddings and layers 0 and 2 are speculators ids 0, 1 and 3 (id k = the
// stream entering layer k, so layer i's output is id i+1), and SpecForge's
// aux ids are the layers themselves with model.norm's output beside them.
func TestDumpFormatSummary(t *testing.T) {
	f := newHFFake(t, 1)
	f.Exec("input ids 1,5,7")
	f.Exec("capture site model.embed_tokens hidden_states")
	f.Exec("capture layers 0,2")
	f.Exec("run")
	d := t.TempDir()
	f.AssertExec("dump "+d+"/hs --format speculators", "dumped 1 sequence (3 tokens) to "+d+"/hs: speculators ids 0,1,3 (the embeddings (id 0) and hsdb layers 0,2), bf16\n")
	f.Exec("capture clear")
	f.Exec("capture layers 0,1,2")
	f.Exec("capture site model.norm hidden_states")
	f.Exec("run")
	f.AssertExec("dump "+d+"/sf --format specforge", "dumped 1 sequence (3 tokens) to "+d+"/sf: specforge ids 0,1,2 (hsdb layers 0,1,2 (aux_hidden_state) and model.norm's output (hidden_state)), bf16\n")
}

// TestInputEmptyPart: `input text "x" ;` (a trailing ';') and `input ids
// 1 ;; ids 2` were refused as `input: "": want ids, text or file`, quoting
// nothing; the message now says which part is empty (counted by hand: the
// part after the last ';' of two is part 2; between ";;" of three, part 2).
func TestInputEmptyPart(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError(`input text "x" ;`, "input: part 2 of 2 (between ';') is empty")
	f.AssertError("input ids 1 ;; ids 2", "input: part 2 of 3 (between ';') is empty")
	f.AssertError("input words 1", `"words": want ids, text or file`)
}
