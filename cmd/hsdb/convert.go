package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hsdb/engine/llama2c"
	"hsdb/engine/regfile"
)

func init() {
	register(&subcommand{name: "convert", usage: convertUsage,
		summary: "convert a llama2.c checkpoint to an HF directory (config.json, model.safetensors, tokenizer)", run: runConvert})
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// convertUsage is convert's one usage line, as `hsdb --help` lists it.
const convertUsage = "convert llama2c IN.bin --tokenizer tok.bin [--tokenizer tok.model] --out DIR [--force]"

// isHelp reports whether a is a help flag as package flag takes it (-h,
// -help, --help).
func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

func runConvert(args []string, io stdio) int {
	fs := newFlagSet("convert llama2c")
	var toks multiFlag
	fs.Var(&toks, "tokenizer", "tokenizer `file` to copy (llama2.c .bin or SentencePiece .model); repeatable")
	out := fs.String("out", "", "output directory")
	force := fs.Bool("force", false, "replace an existing output directory")
	// `hsdb convert --help` and `hsdb convert llama2c --help` list the
	// flags and exit 0, as every subcommand's --help does.
	if len(args) > 0 && isHelp(args[0]) || len(args) > 1 && args[0] == "llama2c" && isHelp(args[1]) {
		helpOrError(fs, flag.ErrHelp, io, convertUsage, args, nil)
		return 0
	}
	if len(args) == 0 || args[0] != "llama2c" {
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") { // hsdb convert lama2c: the one format it converts, offered when near
			fmt.Fprintf(io.Err, "hsdb convert: unknown format %q%s\n", args[0], didYouMean(args[0], []string{"llama2c"}, "hsdb convert "))
		}
		fmt.Fprintln(io.Err, "hsdb convert: usage: hsdb "+convertUsage)
		return 2
	}
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		fmt.Fprintln(io.Err, "hsdb convert llama2c: the checkpoint IN.bin comes first: hsdb "+convertUsage)
		return 2
	}
	in := args[1]
	restore := onceFlags(fs)
	err := fs.Parse(args[2:])
	restore()
	if done, code := helpOrError(fs, err, io, convertUsage, args, nil); done {
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
	// The files it reads are looked at first: one that is not there or
	// cannot be read is a usage error (exit 2), as a missing -x script or
	// --model path, and said before --out is touched.
	for i, p := range append([]string{in}, toks...) {
		if f, err := regfile.Open(p); err != nil {
			what := "IN.bin"
			if i > 0 {
				what = "--tokenizer"
			}
			fmt.Fprintf(io.Err, "hsdb convert llama2c: %s: %s\n", what, errText(err.Error()))
			return 2
		} else {
			f.Close()
		}
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
