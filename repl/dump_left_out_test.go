package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpTrainerFormatLeftOut: `dump --format speculators|specforge`
// wrote the captured layers (and the one site each format holds: the
// embeddings as speculators' id 0, model.norm's output as SpecForge's
// hidden_state) and dropped every other capture without a word: a
// router's topk_ids captured beside the layers seemed dumped. By the
// formats' definitions: speculators has no place for model.norm's output
// nor a self_attn output, SpecForge none for the self_attn output, hsdb's
// own dump writes both.
func TestDumpTrainerFormatLeftOut(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2,3")
	f.Exec("capture site model.norm hidden_states")
	f.Exec("capture site layers.1.self_attn output")
	f.Exec("run")
	dir := t.TempDir()
	f.AssertExec("dump "+filepath.Join(dir, "s")+" --format speculators", "note: not written: model.norm:hidden_states, model.layers.1.self_attn:output (speculators files")
	f.AssertExec("dump "+filepath.Join(dir, "f")+" --format specforge", "note: not written: model.layers.1.self_attn:output (specforge files")
	if out := f.Exec("dump " + filepath.Join(dir, "h")); strings.Contains(out, "not written") {
		t.Errorf("hsdb's dump noted a capture left out:\n%s", out)
	}
}

// TestDumpSpeculatorsCompressRefused: `dump DIR --format speculators
// --compress` wrote uncompressed hs_{idx}.safetensors without a word
// (--compress ignored), where `dump DIR --compress` and `hsdb capture
// --format speculators --compress` refuse it: only SpecForge's trainer
// reads a compressed sample (.ckpt.gz). Refused alike, nothing written.
func TestDumpSpeculatorsCompressRefused(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("capture layers 1,2,3")
	f.Exec("run")
	dir := filepath.Join(t.TempDir(), "s")
	f.AssertError("dump "+dir+" --format speculators --compress", "dump "+dir+": invalid capture request: --compress: only SpecForge samples have a compressed form")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused dump left %s: %v", dir, err)
	}
}
