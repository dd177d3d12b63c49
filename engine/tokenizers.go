package engine

import (
	"fmt"
	"path/filepath"
	"strings"

	"hsdb/engine/modelpath"
	"hsdb/engine/regfile"
	"hsdb/engine/stories"
	"hsdb/engine/tokenizer"
)

// Tokenizer returns the model's tokenizer, loading it on first use: for a
// directory, tokenizer.json (HF), else tiktoken.model (Kimi-K2/K2.5's
// tiktoken ranks, with tokenizer_config.json's special tokens), else
// tokenizer.model (SentencePiece; in an HF directory with a
// tokenizer_config.json, encoded and given BOS/EOS as transformers'
// AutoTokenizer does: tokenizer.LoadSentencePieceDir), else tokenizer.bin
// (llama2.c); for a
// llama2.c checkpoint, tokenizer.bin or tok*.bin beside it; for the
// embedded model, its tokenizer.bin. The error says which files were looked
// for.
func (e *Engine) Tokenizer() (tokenizer.Tokenizer, error) {
	if e.tok != nil || e.tokErr != nil {
		return e.tok, e.tokErr
	}
	e.tok, e.tokErr = FindTokenizer(e.Path, e.Dims.Vocab)
	return e.tok, e.tokErr
}

// FindTokenizer loads the tokenizer Tokenizer would for the model at path
// ("" or "embedded" for the embedded stories260K) whose config.json says
// vocab_size vocab, without loading the model: a command that needs one
// (generate --prompt, capture --data with text rows) says it is missing
// before a load that takes minutes on a large model. Errors: which files
// were looked for; a tokenizer of more tokens than vocab, or a Kimi
// tiktoken.model of fewer (vocab 0: not checked).
func FindTokenizer(path string, vocab int) (tokenizer.Tokenizer, error) {
	tok, err := findTokenizer(path)
	if tok != nil && vocab > 0 && tok.VocabSize() > vocab {
		return nil, fmt.Errorf("tokenizer %s has %d tokens, more than the model's vocab_size %d", tok.Name(), tok.VocabSize(), vocab)
	}
	if k, ok := tok.(*tokenizer.Tiktoken); ok && vocab > 0 && k.VocabSize() < vocab {
		// Kimi's special tokens take the 256 ids after the ranks, and a
		// Kimi model's vocab_size is exactly those (Kimi-K2: 163584 ranks,
		// 163840): a rank file cut short at a line end, or another model's,
		// parses, then gives [BOS], [EOS] and <|im_end|> ids the model
		// holds for ordinary tokens, and merges fewer bytes.
		n := k.VocabSize() - tokenizer.KimiReservedSpecials
		return nil, fmt.Errorf("tokenizer %s has %d ranks, so Kimi's %d special tokens are ids %d..%d, but the model's vocab_size is %d (%d ranks and the specials): the tiktoken.model is cut short or another model's",
			k.Name(), n, tokenizer.KimiReservedSpecials, n, k.VocabSize()-1, vocab, vocab-tokenizer.KimiReservedSpecials)
	}
	return tok, err
}

func findTokenizer(path string) (tokenizer.Tokenizer, error) {
	mp, err := modelpath.Resolve(path)
	if err != nil {
		return nil, err
	}
	if mp.Kind == modelpath.KindEmbedded {
		data, err := stories.Files.ReadFile("model/tokenizer.bin")
		if err != nil {
			return nil, err
		}
		return asTokenizer(tokenizer.ParseLlama2C(data, "tokenizer.bin"))
	}
	dir := mp.Dir
	try := []string{"tokenizer.json", "tiktoken.model", "tokenizer.model", "tokenizer.bin"}
	if mp.Kind == modelpath.KindLlama2C {
		if m, _ := filepath.Glob(filepath.Join(dir, "tok*.bin")); len(m) > 0 {
			for _, f := range m {
				if f != mp.File {
					try = append(try, filepath.Base(f))
				}
			}
		}
	}
	for _, name := range try {
		p := filepath.Join(dir, name)
		if ok, err := regfile.Present(p); err != nil {
			return nil, err
		} else if !ok { // a broken symbolic link is present: its loader names it and its target
			continue
		}
		// Each loader returns a typed pointer: convert only a non-nil one to
		// the interface, so a failed load is a nil Tokenizer and an error.
		switch {
		case name == "tokenizer.json":
			return asTokenizer(tokenizer.LoadHF(p))
		case name == "tiktoken.model":
			return asTokenizer(tokenizer.LoadKimi(p))
		case name == "tokenizer.model" && mp.Kind == modelpath.KindHF:
			return asTokenizer(tokenizer.LoadSentencePieceDir(p))
		case strings.HasSuffix(name, ".model"):
			return asTokenizer(tokenizer.LoadSentencePiece(p))
		default:
			return asTokenizer(tokenizer.LoadLlama2C(p))
		}
	}
	if filepath.Clean(path) == filepath.Clean(dir) {
		return nil, fmt.Errorf("no tokenizer in %s (looked for %s)", dir, strings.Join(try, ", "))
	}
	return nil, fmt.Errorf("no tokenizer for %s (looked for %s in %s)", path, strings.Join(try, ", "), dir)
}

// asTokenizer returns t as a Tokenizer, or a nil interface when err is set.
func asTokenizer[T tokenizer.Tokenizer](t T, err error) (tokenizer.Tokenizer, error) {
	if err != nil {
		return nil, err
	}
	return t, nil
}
