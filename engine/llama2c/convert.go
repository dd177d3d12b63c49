package llama2c

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hsdb/engine/safetensors"
)

// Convert writes the llama2.c checkpoint at binPath as an HF model directory
// outDir: config.json, model.safetensors (float32, HF tensor names, q/k rows
// permuted to HF's RoPE halves) and the tokenizer files given (a llama2.c
// tokenizer .bin is copied as tokenizer.bin, a SentencePiece .model as
// tokenizer.model). The directory is built under a temporary name beside
// outDir and renamed into place, so a failure leaves nothing behind; an
// existing outDir is an error unless force is set (it is then replaced).
func Convert(binPath string, tokenizers []string, outDir string, force bool) error {
	ck, err := Read(binPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(outDir); err == nil && !force {
		return fmt.Errorf("convert: %s exists (use --force to replace it)", outDir)
	}
	parent := filepath.Dir(filepath.Clean(outDir))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(outDir)+".tmp-")
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "config.json"), ck.ConfigJSON(), 0o644); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	var named []safetensors.Named
	for _, n := range ck.Order {
		named = append(named, safetensors.Named{Name: n, T: ck.Tensors[n]})
	}
	meta := map[string]string{"format": "pt", "converted_from": filepath.Base(binPath), "converter": "hsdb convert llama2c"}
	if err := safetensors.WriteFile(filepath.Join(tmp, "model.safetensors"), named, meta); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	for _, tk := range tokenizers {
		name := "tokenizer.bin"
		if strings.HasSuffix(tk, ".model") {
			name = "tokenizer.model"
		}
		data, err := os.ReadFile(tk)
		if err != nil {
			return fmt.Errorf("convert: tokenizer: %w", err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
	}
	if force {
		if err := os.RemoveAll(outDir); err != nil {
			return fmt.Errorf("convert: replacing %s: %w", outDir, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := os.Rename(tmp, outDir); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}
