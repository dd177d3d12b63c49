package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"hsdb/engine"
	"hsdb/engine/modelpath"
	"hsdb/engine/tokenizer"
	"hsdb/inspect/capture"
	hsdbg "hsdb/inspect/debug"
)

func init() {
	register(&subcommand{name: "generate", usage: generateUsage,
		summary: "run the model and print what it generates (greedy by default; like llama2.c's run.c; an HF model stops at its eos_token_id as HF's generate)", run: runGenerate})
}

// parseIDs reads "1,2,3" (spaces allowed) as token ids; an empty item
// is an error (capture.SplitIDs).
func parseIDs(s string) ([]int32, error) {
	var out []int32
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no token ids in %q", s)
	}
	fields, err := capture.SplitIDs(s)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("token id %q is not an integer", f)
		}
		out = append(out, int32(v))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no token ids in %q", s)
	}
	return out, nil
}

const generateUsage = "generate [--model PATH] [--tp N] [--load-layers A-B] [--ids 1,2,3 | --prompt TEXT] [-n STEPS] [--temperature T] [--seed S] [--json]"

func runGenerate(args []string, io stdio) int {
	fs := newFlagSet("generate")
	var mf modelFlags
	mf.register(fs, "json")
	ids := fs.String("ids", "", "prompt token ids, e.g. 1,2,3 (default: BOS alone: the tokenizer's; without a tokenizer or a BOS in it, the model's bos_token_id, generation_config.json's else config.json's, as HF's generate starts without input ids)")
	prompt := fs.String("prompt", "", "prompt text, encoded with the model's tokenizer after the BOS its reference adds to a text (none for Kimi's tiktoken.model, nor for an HF tokenizer whose tokenizer_config.json says add_bos_token false, nor for a bare tokenizer.model whose tokenizer_config.json does not say add_bos_token true) and before the EOS it appends (HF's add_eos_token or a post_processor template ending in a special token; none for llama2.c or Kimi)")
	steps := fs.Int("n", 256, "positions to run, prompt included (run.c's -n; at most max_position_embeddings, to which a larger -n is clamped, with a note)")
	temp := fs.Float64("temperature", 0, "sampling temperature; 0 is greedy")
	seed := fs.Uint64("seed", 1, "random seed for sampling")
	if done, code := parseArgs(fs, args, io, generateUsage); done {
		return code
	}
	asJSON := &mf.json
	fail := failer(io, "generate", asJSON)
	if fs.NArg() > 0 {
		mf.json = mf.json || jsonAsked(fs, args) // generate extra --json: the parse stopped before --json
		return fail(2, "unexpected arguments %q (the prompt goes in --prompt or --ids)", fs.Args())
	}
	if *temp < 0 || math.IsNaN(*temp) || math.IsInf(*temp, 0) || *temp > 100 {
		return fail(2, "--temperature %v: want 0 (greedy) or a positive number up to 100", *temp)
	}
	if *steps < 1 {
		return fail(2, "-n %d: want at least 1 position", *steps)
	}
	if *ids != "" && *prompt != "" {
		return fail(2, "give --ids or --prompt, not both")
	}
	if err := mf.validate(); err != nil {
		return fail(2, "%v", err)
	}
	// --ids is read before the model loads (minutes for a large one), so a
	// mistyped list is said at once.
	var in []int32
	if *ids != "" {
		var err error
		if in, err = parseIDs(*ids); err != nil {
			if strings.Contains(*ids, ";") {
				err = fmt.Errorf("%v: generate runs one sequence (`;` separates sequences in `hsdb capture --ids` and the debugger's `input`, where `gen N` continues them all)", err)
			}
			return fail(2, "--ids: %v", err)
		}
		// Checked against config.json too (the load's limits), exit 2 as
		// capture --ids: an id past vocab_size, or more ids than -n.
		if err := checkPrompt(in, *steps, mf.model); err != nil {
			return fail(2, "%v", err)
		}
	}
	if err := mf.validateModelPath(); err != nil {
		return fail(2, "%v", err)
	}
	if err := mf.checkFit(); err != nil { // --tp, --load-layers, --ep, --pp the model rules out: usage, before the load
		return fail(2, "%v", err)
	}
	// The prompt comes from the tokenizer, and so does the BOS alone where
	// there is one, else from the model's bos_token_id (bosStart): a
	// missing tokenizer, or a missing bos_token_id without one, is said
	// before the load. One of more tokens than config.json's vocab_size is
	// refused here as the load's Tokenizer would refuse it.
	if _, perr := modelpath.Resolve(mf.model); *ids == "" && perr == nil {
		vocab := configVocab(mf.model)
		if _, err := engine.FindTokenizer(mf.model, vocab); err != nil {
			if *prompt != "" {
				return fail(2, "--prompt needs a tokenizer: %v; give token ids with --ids instead", err)
			}
			if vocab > 0 { // else the ids are checked after the load, against its vocab
				if _, err := bosStart(mf.model, vocab, err); err != nil {
					return fail(bosExit(err), "%v", err)
				}
			}
		}
	}
	e, err := mf.load(io.Err)
	if err != nil {
		return fail(loadExit(err), "%v", err)
	}
	defer e.Close()
	partial := hsdbg.New(e).LoadedLayers().PartialNote() // as the debugger notes it at every run
	if partial != "" {
		partial += ": this is not the model's generation"
		fmt.Fprintf(io.Err, "hsdb generate: warning: %s\n", partial)
	}
	tok, tokErr := e.Tokenizer()
	startBOS := int32(-1) // the BOS id a generation without a prompt starts from, not printed (as run.c)
	switch {
	case *ids != "":
	case tokErr != nil:
		if *prompt != "" {
			return fail(2, "--prompt needs a tokenizer: %v; give token ids with --ids instead", tokErr)
		}
		if in, err = bosStart(e.Path, e.Dims.Vocab, tokErr); err != nil {
			return fail(bosExit(err), "%v", err)
		}
		startBOS = in[0]
	default:
		// A prompt starts as its tokenizer starts a text (no [BOS] for
		// Kimi's tiktoken); without one, generation starts from BOS alone:
		// the tokenizer's, else the model's bos_token_id, as HF's generate
		// starts from it without input ids (a Qwen tokenizer has no
		// bos_token; its config.json's bos_token_id is <|endoftext|>).
		bos := tokenizer.TextBOS(tok)
		if *prompt == "" {
			bos = tok.BOS()
			if bos < 0 {
				id, ok, err := engine.BOSID(e.Path, e.Dims.Vocab)
				if err != nil {
					return fail(1, "%v", err)
				}
				if ok {
					bos = id
				}
			}
			startBOS = bos
		}
		if bos >= 0 {
			in = append(in, bos)
		}
		if *prompt != "" {
			p, err := tok.Encode(*prompt)
			if err != nil {
				return fail(1, "--prompt: %v", err)
			}
			in = append(in, p...)
			if eos := tokenizer.TextEOS(tok); eos >= 0 {
				in = append(in, eos) // as HF's tokenizer(prompt) and vLLM's prompt encoding (add_special_tokens) end it
			}
		}
		if len(in) == 0 {
			return fail(2, "the tokenizer has no BOS token and %s, which generation starts from without a prompt (as HF's generate without input ids); give --prompt or --ids", unsetBOS(e.Path))
		}
	}
	if err := checkPromptIDs(in, *steps, e.Dims.Vocab); err != nil { // before anything is printed
		return fail(2, "%v", err)
	}
	// An HF model stops at its eos_token_id(s), as HF's generate does
	// (generation_config.json over config.json); without one, at the
	// tokenizer's BOS (as run.c) and EOS.
	stop, hfEOS, err := engine.EOSIDs(e.Path, e.Dims.Vocab)
	if err != nil {
		return fail(1, "%v", err)
	}
	if !hfEOS && tok != nil && tok.BOS() >= 0 {
		stop = append(stop, tok.BOS()) // run.c stops when the model emits BOS
	}
	if !hfEOS && tok != nil && tok.EOS() >= 0 {
		stop = append(stop, tok.EOS())
	}
	prev := in[len(in)-1]
	o := engine.GenerateOptions{Steps: *steps, Stop: stop, Sampler: engine.NewSampler(*temp, *seed)}
	if !*asJSON && tok != nil {
		// run.c prints the prompt as it feeds it, from the token after
		// BOS (the model's bos_token_id a start without a prompt took
		// too); a prompt that starts without BOS (Kimi's tiktoken adds
		// none) is printed from its first token, which follows nothing.
		if in[0] != tok.BOS() && in[0] != startBOS {
			fmt.Fprint(io.Out, safePiece(tok.DecodePiece(-1, in[0])))
		}
		for i := 1; i < len(in); i++ {
			fmt.Fprint(io.Out, safePiece(tok.DecodePiece(in[i-1], in[i])))
		}
		o.OnToken = func(id int32) bool {
			fmt.Fprint(io.Out, safePiece(tok.DecodePiece(prev, id)))
			prev = id
			return true
		}
	}
	stoppedAt := int32(-1)
	o.OnStop = func(id int32) { stoppedAt = id }
	out, err := e.Generate(in, o)
	if out == nil {
		out = []int32{} // "ids": [], not null, when the first choice is a stop id
	}
	if err != nil {
		if !*asJSON {
			fmt.Fprintln(io.Err) // after the tokens printed so far
		}
		return fail(1, "%v", err)
	}
	// -n past max_position_embeddings is clamped to it (run.c clamps steps
	// to seq_len), silently until now: say where it stopped.
	clamped := ""
	if mp := e.Dims.MaxPos; mp > 0 && *steps > mp && stoppedAt < 0 && len(in)+len(out)-1 >= mp {
		clamped = fmt.Sprintf("-n %d is past max_position_embeddings %d: generation ran %d positions (%d generated after the %d-token prompt; run.c clamps -n to seq_len likewise)", *steps, mp, mp, len(out), len(in))
	}
	if *asJSON {
		res := map[string]any{"prompt_ids": in, "ids": out}
		var notes []string
		if partial != "" {
			notes = append(notes, partial)
		}
		if clamped != "" {
			notes = append(notes, clamped)
		}
		if stoppedAt >= 0 {
			res["stopped_at"] = stoppedAt
			if len(out) == 0 {
				notes = append(notes, stopNote(stoppedAt, hfEOS))
			}
		}
		if notes != nil {
			res["notes"] = notes
		}
		if tok != nil {
			res["text"] = tok.Decode(out)
		}
		if err := json.NewEncoder(io.Out).Encode(res); err != nil {
			return fail(1, "%v", err)
		}
		return 0
	}
	if stoppedAt >= 0 && len(out) == 0 { // an empty line alone says nothing
		fmt.Fprintf(io.Err, "hsdb generate: %s\n", stopNote(stoppedAt, hfEOS))
	}
	if clamped != "" {
		defer fmt.Fprintf(io.Err, "hsdb generate: note: %s\n", clamped) // after the text's line
	}
	if tok == nil { // the ids as --ids takes them back
		s := make([]string, len(out))
		for i, id := range out {
			s[i] = strconv.Itoa(int(id))
		}
		fmt.Fprintln(io.Out, strings.Join(s, ","))
		return 0
	}
	fmt.Fprintln(io.Out)
	return 0
}

// bosStart is the prompt generate starts from without --ids, --prompt or
// a tokenizer (noTok says why there is none): the model's bos_token_id
// alone, as HF's generate starts from it when given no input ids
// (engine.BOSID: generation_config.json's, else config.json's). Without
// one it is refused as HF refuses it, naming the field and the files read.
func bosStart(path string, vocab int, noTok error) ([]int32, error) {
	id, ok, err := engine.BOSID(path, vocab)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no --ids and no tokenizer (%v), and %s, which generation starts from without input ids (HF's generate refuses the same); give --ids", errNoStart, noTok, unsetBOS(path))
	}
	return []int32{id}, nil
}

// errNoStart marks bosStart's refusal of a generation with nothing to
// start from (no --ids, no tokenizer, no bos_token_id): the user's to
// fix with --ids, a usage error (exit 2) as a tokenizer without BOS and
// no bos_token_id is; a config whose bos_token_id is malformed stays the
// model's fault (exit 1).
var errNoStart = errors.New("nothing to start generating from")

// bosExit is generate's exit status for bosStart's error err.
func bosExit(err error) int {
	if errors.Is(err, errNoStart) {
		return 2
	}
	return 1
}

// unsetBOS says that the model at path sets no bos_token_id, naming the
// files engine.BOSID read: config.json, and generation_config.json where
// there is one.
func unsetBOS(path string) string {
	unset := "the model's config sets no bos_token_id"
	if mp, err := modelpath.Resolve(path); err == nil && mp.Kind == modelpath.KindHF {
		cfg := filepath.Join(mp.Dir, "config.json")
		unset = cfg + " sets no bos_token_id"
		if gen := filepath.Join(mp.Dir, "generation_config.json"); regularFile(gen) {
			unset = "neither " + gen + " nor " + cfg + " sets bos_token_id"
		}
	}
	return unset
}

// regularFile reports whether path names a regular file.
func regularFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// stopNote says why generation produced nothing: the model's first choice
// after the prompt was id, a stop id (the HF model's eos_token_id when
// hfEOS, else the tokenizer's BOS or EOS, as run.c stops).
func stopNote(id int32, hfEOS bool) string {
	what := "the tokenizer's BOS or EOS, where run.c stops"
	if hfEOS {
		what = "the model's eos_token_id, where HF's generate stops"
	}
	return fmt.Sprintf("nothing generated: the model's first choice after the prompt is id %d, %s (give another prompt, or --temperature above 0 to sample)", id, what)
}

// checkPrompt is checkPromptIDs against the vocab_size of the model at
// path (configVocab), before the model loads.
func checkPrompt(in []int32, steps int, path string) error {
	return checkPromptIDs(in, steps, configVocab(path))
}

// configVocab is the vocab_size of the config of the model at path
// (modelpath.ConfigDims: config.json, or a llama2.c checkpoint's header,
// read alone), or 0 where it has none or it cannot be read (the load's to
// say).
func configVocab(path string) int {
	if d, err := modelpath.ConfigDims(path); err == nil {
		return d.Vocab
	}
	return 0
}

// checkPromptIDs says what is wrong with generate's prompt ids in: more
// than steps (-n) of them, or an id outside [0, vocab) (vocab 0: not
// checked).
func checkPromptIDs(in []int32, steps, vocab int) error {
	if len(in) > steps {
		return fmt.Errorf("the prompt has %d tokens, more than -n %d positions: nothing would be generated", len(in), steps)
	}
	for i, id := range in {
		if vocab > 0 && (id < 0 || int(id) >= vocab) {
			return fmt.Errorf("prompt token %d is id %d, outside the vocabulary [0, %d)", i, id, vocab)
		}
	}
	return nil
}

// safePiece is run.c's safe_printf for a piece about to be printed: a
// piece of one ASCII byte that is neither printable nor whitespace (a
// byte token such as <0x1B>, ESC, or <0x08>, backspace) is dropped, as
// run.c drops it, instead of reaching the terminal raw, where it could
// recolour, erase or overwrite what was printed. Bytes from 0x80 on pass
// (they are parts of UTF-8 characters that byte tokens spell out together,
// which run.c would drop one by one); --json's "text" escapes everything.
func safePiece(p string) string {
	if len(p) == 1 {
		if c := p[0]; c < 0x80 && !(c >= 0x20 && c < 0x7f) && !strings.ContainsRune(" \t\n\v\f\r", rune(c)) {
			return ""
		}
	}
	return p
}
