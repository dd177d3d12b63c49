package llama2c

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"hsdb/engine/regfile"
	"hsdb/engine/safetensors"
	"hsdb/engine/tokenizer"
)

// converterName marks model.safetensors files Convert wrote (metadata
// "converter"), so that --force replaces only those.
const converterName = "hsdb convert llama2c"

// Convert writes the llama2.c checkpoint at binPath as an HF model directory
// outDir: config.json, model.safetensors (float32, HF tensor names, q/k rows
// permuted to HF's RoPE halves) and the tokenizer files given (a llama2.c
// tokenizer .bin is copied as tokenizer.bin, a SentencePiece .model as
// tokenizer.model). The directory is built under a temporary name beside
// outDir and renamed into place, so a failure leaves nothing behind; each
// file is read back and compared before the rename (writeVerified), and
// staging directories a killed Convert for the same outDir left are
// removed first (removeStaleStaging: only hsdb's own, never anything
// else). An
// existing outDir is an error unless force is set, and force replaces only
// a directory that an earlier Convert wrote (nothing else in it), never a
// file, a symbolic link (even to a conversion) or another directory.
func Convert(binPath string, tokenizers []string, outDir string, force bool) error {
	ck, err := Read(binPath)
	if err != nil {
		return err
	}
	if err := outFree(outDir, force); err != nil {
		return err
	}
	if err := removeStaleStaging(outDir); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	parent := filepath.Dir(filepath.Clean(outDir))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(outDir))+".tmp-")
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := markStaging(tmp); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := writeVerified(filepath.Join(tmp, "config.json"), ck.ConfigJSON()); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	var named []safetensors.Named
	for _, n := range ck.Order {
		named = append(named, safetensors.Named{Name: n, T: ck.Tensors[n]})
	}
	meta := map[string]string{"format": "pt", "converted_from": filepath.Base(binPath), "converter": converterName}
	if err := safetensors.WriteFile(filepath.Join(tmp, "model.safetensors"), named, meta); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	given := map[string]string{}
	for _, tk := range tokenizers {
		name := "tokenizer.bin"
		if strings.HasSuffix(tk, ".model") {
			name = "tokenizer.model"
		}
		if prev, ok := given[name]; ok {
			return fmt.Errorf("convert: --tokenizer %s and --tokenizer %s would both be %s", prev, tk, name)
		}
		given[name] = tk
		if err := checkTokenizer(tk, ck.Header.VocabSize); err != nil {
			return fmt.Errorf("convert: --tokenizer %s: %w", tk, err)
		}
		data, err := regfile.ReadFile(tk, tokenizer.MaxFileBytes)
		if err != nil {
			return fmt.Errorf("convert: tokenizer: %w", err)
		}
		if err := writeVerified(filepath.Join(tmp, name), data); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
	}
	if err := os.Remove(filepath.Join(tmp, stagingMark)); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	// What sits at outDir is checked again: another process (a second
	// convert, a user) may have put something there while this one wrote,
	// and the move aside below ends in RemoveAll. Checked only at the start,
	// a directory made meanwhile was replaced without --force, and with it
	// one that hsdb did not write was deleted.
	if err := outFree(outDir, force); err != nil {
		return err
	}
	// Move an earlier conversion aside first, so that at every moment one
	// complete directory sits at outDir or beside it.
	old := ""
	if _, err := os.Lstat(outDir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(outDir, old); err != nil {
			return fmt.Errorf("convert: replacing %s: %w", outDir, err)
		}
	}
	if err := os.Rename(tmp, outDir); err != nil {
		if old != "" {
			os.Rename(old, outDir)
		}
		return fmt.Errorf("convert: %w", err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// outFree refuses outDir as Convert's destination for what is there: an
// existing path without force; with force, a symbolic link (dangling or
// not: renaming over it would replace the link without a word), a file, or
// a directory that Convert did not write (earlierConversion). Nothing
// there is no error.
func outFree(outDir string, force bool) error {
	st, err := os.Lstat(outDir)
	if err != nil {
		return nil
	}
	if !force {
		return fmt.Errorf("convert: %s exists (use --force to replace an earlier conversion)", outDir)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("convert: %s is a symbolic link, not an earlier conversion; refusing to replace it", outDir)
	}
	if !st.IsDir() {
		return fmt.Errorf("convert: %s is a file, not an earlier conversion; refusing to replace it", outDir)
	}
	if err := earlierConversion(outDir); err != nil {
		return fmt.Errorf("convert: --force replaces only a directory that hsdb convert wrote: %w", err)
	}
	return nil
}

// earlierConversion checks that dir holds exactly what Convert writes
// (config.json, model.safetensors with hsdb's converter metadata, and
// tokenizer files), so that --force never deletes anything else.
func earlierConversion(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	allowed := map[string]bool{"config.json": true, "model.safetensors": true, "tokenizer.bin": true, "tokenizer.model": true}
	for _, e := range entries {
		if !allowed[e.Name()] || e.IsDir() {
			return fmt.Errorf("%s holds %s, which hsdb convert does not write", dir, e.Name())
		}
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	defer f.Close()
	if f.Metadata()["converter"] != converterName {
		return fmt.Errorf("%s/model.safetensors was not written by hsdb convert (metadata converter=%q)", dir, f.Metadata()["converter"])
	}
	return nil
}

// checkTokenizer parses a tokenizer file as what its name says it is and
// checks it covers the model's vocabulary, so that a wrong file is refused
// here instead of failing when the model is loaded.
func checkTokenizer(path string, vocab int32) error {
	if vocab < 0 {
		vocab = -vocab
	}
	var n int
	if strings.HasSuffix(path, ".model") {
		t, err := tokenizer.LoadSentencePiece(path)
		if err != nil {
			return err
		}
		n = t.VocabSize()
	} else {
		t, err := tokenizer.LoadLlama2C(path)
		if err != nil {
			return err
		}
		n = t.VocabSize()
	}
	if n != int(vocab) {
		return fmt.Errorf("%d tokens, the checkpoint's vocab_size is %d", n, vocab)
	}
	return nil
}
