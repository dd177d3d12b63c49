// Package stories embeds hsdb's default model: Andrej Karpathy's stories260K
// (llama2.c tinyllamas, MIT licence), converted from its llama2.c checkpoint
// to an HF directory by `hsdb convert llama2c` (scripts/convert-stories.sh
// regenerates it): config.json, model.safetensors (float32), tokenizer.bin
// (llama2.c format) and tokenizer.model (SentencePiece).
//
// It holds data only and imports nothing of hsdb; engine.LoadDefault reads
// it.
package stories

import "embed"

// Files holds model/config.json, model/model.safetensors,
// model/tokenizer.bin and model/tokenizer.model.
//
//go:embed model
var Files embed.FS
