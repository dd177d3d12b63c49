#!/usr/bin/env bash
# Regenerates the embedded default model (engine/stories/model) from the
# llama2.c checkpoint in testdata/stories260K with hsdb's own converter.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./cmd/hsdb convert llama2c testdata/stories260K/stories260K.bin \
  --tokenizer testdata/stories260K/tok512.bin --tokenizer testdata/stories260K/tok512.model \
  --out engine/stories/model --force
