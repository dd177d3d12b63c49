package repl

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

// storiesDir copies the embedded model's HF files (engine/stories/model:
// config.json, model_type llama, and tokenizer.model, as `hsdb convert
// llama2c` wrote them) into a new directory, with tokenizer_config.json
// when tokCfg is not "".
func storiesDir(t *testing.T, tokCfg string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.model"} {
		data, err := os.ReadFile(filepath.Join("../engine/stories/model", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if tokCfg != "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(tokCfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// openWithTokenizer opens dir with the tokenizer the engine finds for it,
// as cmd/hsdb's debugger does.
func openWithTokenizer(t *testing.T, dir string) *fakeTerm {
	t.Helper()
	e, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := hsdbg.New(e)
	tok, err := e.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	s.Tok = tok
	f := newFakeOn(t, s, &bytes.Buffer{})
	t.Cleanup(f.Close)
	return f
}

// TestInputTextSentencePieceFlags: `input text` and `info model` on a
// bare tokenizer.model. Without tokenizer_config.json (a converted
// llama2.c model) the text starts with llama2.c run.c's BOS 1 and the
// SentencePiece ids ("▁He" 346 ...); with {"add_eos_token": true} beside
// config.json's model_type llama, transformers 5.17 builds
// TokenizersBackend and tok("Hello world").input_ids is [440, 411, 306,
// 414, 263, 304, 341, 2] (engine/tokenizer/testdata/sp_flags.expected.json,
// case model_type_add_eos): no BOS, no "▁" before the text, EOS 2.
func TestInputTextSentencePieceFlags(t *testing.T) {
	plain := openWithTokenizer(t, storiesDir(t, ""))
	plain.AssertExec(`input text "Hello world"`, "[1, 346, 306, 414, 263, 304, 341]")
	plain.AssertExec("info model", "tokenizer          sentencepiece:tokenizer.model\n", "text BOS           1 (", "text EOS           none (")
	hf := openWithTokenizer(t, storiesDir(t, `{"add_eos_token": true}`))
	hf.AssertExec(`input text "Hello world"`, "[440, 411, 306, 414, 263, 304, 341, 2]")
	hf.AssertExec("info model", "as transformers 5.17 TokenizersBackend (no tokenizer_class", "text BOS           none (", "text EOS           2 (")
}
