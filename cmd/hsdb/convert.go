package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hsdb/engine/llama2c"
)

func init() {
	register(&subcommand{name: "convert", usage: "convert llama2c IN.bin --tokenizer tok.bin [--tokenizer tok.model] --out DIR [--force]",
		summary: "convert a llama2.c checkpoint to an HF directory (config.json, model.safetensors, tokenizer)", run: runConvert})
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runConvert(args []string, io stdio) int {
	if len(args) == 0 || args[0] != "llama2c" {
		fmt.Fprintln(io.Err, "hsdb convert: usage: hsdb convert llama2c IN.bin --tokenizer tok.bin --out DIR [--force]")
		return 2
	}
	fs := newFlagSet("convert llama2c")
	var toks multiFlag
	fs.Var(&toks, "tokenizer", "tokenizer file to copy (llama2.c .bin or SentencePiece .model); repeatable")
	out := fs.String("out", "", "output directory")
	force := fs.Bool("force", false, "replace an existing output directory")
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		fmt.Fprintln(io.Err, "hsdb convert llama2c: the checkpoint IN.bin comes first: hsdb convert llama2c IN.bin --tokenizer tok.bin --out DIR")
		return 2
	}
	in := args[1]
	if done, code := helpOrError(fs, fs.Parse(args[2:]), io, "convert llama2c IN.bin --tokenizer tok.bin --out DIR [--force]"); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(io.Err, "hsdb convert llama2c: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if *out == "" {
		fmt.Fprintln(io.Err, "hsdb convert llama2c: need IN.bin and --out DIR")
		return 2
	}
	// Missing parents are made, as capture --out makes them.
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(*out)), 0o755); err != nil {
		fmt.Fprintf(io.Err, "hsdb convert: --out %s: creating its parent directory: %v\n", *out, err)
		return 1
	}
	if err := llama2c.Convert(in, toks, *out, *force); err != nil {
		fmt.Fprintln(io.Err, "hsdb convert:", strings.TrimPrefix(err.Error(), "convert: ")) // once, not "convert: convert:"
		return 1
	}
	fmt.Fprintf(io.Out, "wrote %s (config.json, model.safetensors%s)\n", *out, tokList(toks))
	return 0
}

func tokList(t []string) string {
	if len(t) == 0 {
		return ""
	}
	return ", tokenizer"
}
