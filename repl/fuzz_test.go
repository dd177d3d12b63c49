package repl

import (
	"bytes"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/tokenizer"
	hsdbg "hsdb/inspect/debug"
)

// fuzzFileWords are the command words that read or write files (dump,
// check, diff, source, input file, set history): a fuzzed line holding one
// is skipped, so that the fuzzer never writes where it should not.
var fuzzFileWords = []string{"dump", "check", "diff", "source", "file", "history", "log"}

// FuzzReplLine: up to four debugger command lines (seeds: the lines of
// scripts/quickstart.hsdb's kind — input, break with conditions, run,
// print with slices, display, watch, gen, info, set, help) executed on a
// fresh session over the embedded stories260K: every line either runs or
// returns an error; none panics, hangs or leaves a pass that Close cannot
// end; a panic, which Exec recovers into an "internal error in CMD"
// error, fails the execution. Lines touching files are skipped
// (fuzzFileWords); gen is capped at 8 steps, so one execution stays a few
// forward passes.
func FuzzReplLine(f *testing.F) {
	for _, s := range []string{
		"input ids 1,403,407 ; ids 1,400\nbreak layers.2\nrun\nprint stream[0, :4]",
		"input text \"Once upon a time\"\nrun\ngen 3",
		"break layers.1 if absmax(stream) > 1e400\nrun\ncontinue",
		"input ids 1,2,3\nbreak lm_head\nrun\ndisplay stream\necho next",
		"watch residual if absmax > 5\ninput ids 1,2\nrun\nbt\nfinish",
		"capture layers 0,2\ncapture site lm_head logits\ninfo batch\ninfo model",
		"set precision 3\nhist stream\ntop logits 5\nranks",
		"tbreak layers.0.mlp\nrun\nstep\nuntil model.norm",
		"help display\nshow\ndelete\nundisplay\nquit",
		"input ids 1,2,3 ; ids 4,5\nbreak layers.1\nrun\nset var hidden_states[0:3, -1] = * 0.5 --rank 1",
		"input ids 1,2,3,4\nbreak layers.0 if nan(residual) > 0 || mean(stream) < -1\nrun\nprint hidden_states[-1, 2:] --seq 0 --tokens 1:3",
		"input ids 1,2\nbreak model.layers.0.self_attn\nrun\nset var stream = stream + 1 --persist",
	} {
		f.Add(s)
	}
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: 2})
	if err != nil {
		f.Fatal(err)
	}
	tok, err := tokenizer.LoadLlama2C(storiesTok)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, script string) {
		if len(script) > 512 {
			return
		}
		lower := strings.ToLower(script)
		for _, w := range fuzzFileWords {
			if strings.Contains(lower, w) {
				return
			}
		}
		lines := strings.Split(script, "\n")
		if len(lines) > 4 {
			return
		}
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "gen" && (len(f[1]) > 1 || f[1] > "8") {
				return
			}
		}
		s := hsdbg.New(e)
		s.Tok = tok
		var buf bytes.Buffer
		term := New(hsdbg.NewLocal(s), &buf, Config{})
		defer term.Close()
		for _, l := range lines {
			// Exec recovers a command's panic into an "internal error"
			// error: without this check the fuzzer saw no crash at all.
			if err := term.Exec(l); err != nil && strings.Contains(err.Error(), "internal error in") {
				t.Fatalf("%q: %v", l, err)
			}
		}
	})
}
