package repl

import (
	"testing"
)

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
