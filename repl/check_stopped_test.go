package repl

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
)

// TestCheckDiffAtStop: at a stopped pass check and diff are refused (they
// run passes of their own), but the refusal told diff to "give
// --no-model", which diff refuses, and told both to "start over (run)",
// which stops at the same breakpoint and is refused again; `help check`
// said it "Needs no stopped pass". Now the refusal says to continue to the
// end and `disable` the breakpoints, check's alone offers --no-model, and
// following it works: after disable and continue check runs.
func TestCheckDiffAtStop(t *testing.T) {
	f, dir := dumpedFake(t)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	f.AssertError("check "+dir, "or give --no-model")
	f.buf.Reset()
	err := f.Term.Exec("diff " + dir)
	if err == nil || strings.Contains(err.Error(), "--no-model") || !strings.Contains(err.Error(), "continue to the end") {
		t.Errorf("diff at a stop: %v; want the way to end the pass and no --no-model", err)
	}
	f.AssertExec("run", "Stopped at model.layers.2 ") // what "start over (run)" led to
	f.AssertError("check "+dir, "`disable` keeps the breakpoints")
	f.AssertError("check "+dir, "or `kill` it")
	f.AssertExec("kill", "aborted") // the way the hint names
	f.AssertExec("check "+dir, "valid")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	f.AssertExec("check "+dir+" --no-model", "valid")
	f.Exec("disable")
	f.AssertExec("continue", "Finished: prefill")
	f.AssertExec("diff "+dir, "valid")
	if h := strings.Join(strings.Fields(f.Exec("help check")), " "); strings.Contains(h, "Needs no stopped pass") || !strings.Contains(h, "not while a pass is stopped") {
		t.Errorf("help check:\n%s", h)
	}
}

// TestDumpLineListsAsTyped: dump's summary wrote the layers as Go prints a
// slice and the dtype in safetensors' spelling ("layers [1 3] (stream),
// F32"), unlike `capture layers 1,3` and `--dtype f32`; it now writes them
// as they are typed, and for a dump of site captures alone their keys.
func TestDumpLineListsAsTyped(t *testing.T) {
	f := newFake(t, 1)
	dir := t.TempDir()
	f.Exec(batchCmd)
	f.Exec("capture layers 1,3")
	f.Exec("run")
	f.AssertExec("dump "+filepath.Join(dir, "a"), "layers 1,3 (stream), f32\n")
	f.AssertExec("dump "+filepath.Join(dir, "b")+" --dtype bf16", "layers 1,3 (stream), bf16\n")
	f.Exec("capture clear")
	f.Exec("capture site layers.2.mlp output")
	f.Exec("run")
	f.AssertExec("dump "+filepath.Join(dir, "c"), ": sites model.layers.2.mlp:output, f32\n")
}

// TestHelpSubcommand: `help set var` and `help info break` (as gdb users
// write them) were "unknown command \"set var\""; they show the command's
// help, which covers its subcommands.
func TestHelpSubcommand(t *testing.T) {
	f := newFake(t, 1)
	f.AssertExec("help set var", "set var TENSOR[ROWS, COLS] = VALUE")
	// The help is wrapped: compare with its words joined by single spaces.
	if h := strings.Join(strings.Fields(f.AssertExec("help info break", "info model [--fp8")), " "); !strings.Contains(h, "break: breakpoints and watches") {
		t.Errorf("help info break:\n%s", h)
	}
	f.AssertError("help nosuch thing", `help: unknown command "nosuch"`)
}

// TestInfoB: gdb's `info b` was refused ("want one of model ..., not
// \"b\"") though `info breakpoints` worked; it lists the breakpoints.
func TestInfoB(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("break layers.2")
	f.AssertExec("info b", "layers.2")
	f.AssertError("info b 1", `info b: unexpected "1"`)
}

// TestInfoFrame: gdb's `info frame` was refused ("want one of model ...,
// not \"frame\""); it shows the frame looked at, as `frame` does, after
// `up` too.
func TestInfoFrame(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("info frame", "not stopped")
	f.Exec(batchCmd)
	f.Exec("break layers.1.mlp")
	f.AssertExec("run", "Stopped at model.layers.1.mlp ")
	f.AssertExec("info frame", "#0  model.layers.1.mlp  LlamaMLP", "tensors: input [10, 64], output [10, 64]")
	f.Exec("up")
	f.AssertExec("info frame", "#1  model.layers.1  LlamaDecoderLayer")
}

// TestUntilBehindSaysSo: `until SITE` for a site the step has already
// passed (layers.0.self_attn is visited before layers.0.mlp, `info
// sites`) ran the pass to its end and printed only "Finished: prefill",
// as if the site had been reached or did not matter; the end now notes
// that the until never stopped. `step` at lm_head, the last site, says the
// same; an until that stops does not.
func TestUntilBehindSaysSo(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.0.mlp")
	f.AssertExec("run", "Stopped at model.layers.0.mlp ")
	f.AssertExec("until layers.0.self_attn", "Finished: prefill", "note: until layers.0.self_attn: the pass ended before reaching it")
	f.AssertExec("run", "Stopped at model.layers.0.mlp ")
	if out := f.AssertExec("until layers.1", "Stopped at model.layers.1 "); strings.Contains(out, "before reaching") {
		t.Errorf("until that stopped:\n%s", out)
	}
	f.Exec("delete")
	f.Exec("break lm_head")
	f.AssertExec("run", "Stopped at lm_head ")
	f.AssertExec("step", "Finished: prefill", "note: step: the pass ended before reaching it")
	if out := f.AssertExec("run", "Stopped at lm_head "); strings.Contains(out, "before reaching") {
		t.Errorf("a new run repeats the note:\n%s", out)
	}
	if out := f.AssertExec("continue", "Finished: prefill"); strings.Contains(out, "before reaching") {
		t.Errorf("continue notes an unreached target:\n%s", out)
	}
}

// TestCompletionSetVarCaptureSite: tab completion offered no `var` after
// `set` and nothing after `set var` (the tensors, as after print), nothing
// after `capture site` (the sites, as after break) and nothing after
// `delete` (its `edits`). The expected words are read off `info sites` of
// stories260K by hand: layer 3 has mlp, and the MLP site shows input,
// gate and up.
func TestCompletionSetVarCaptureSite(t *testing.T) {
	f := newFake(t, 1)
	c := completer{f.Term}
	do := func(line string) string {
		cands, n := c.Do([]rune(line), len([]rune(line)))
		var out []string
		for _, r := range cands {
			out = append(out, line[len(line)-n:]+string(r))
		}
		return strings.Join(out, "|")
	}
	for line, want := range map[string]string{
		"set v":                   "var ",
		"capture site layers.3.m": "layers.3.mlp",
		"capture s":               "site ",
		"delete e":                "edits ",
	} {
		if got := do(line); got != want {
			t.Errorf("%q completes to %q, want %q", line, got, want)
		}
	}
	f.Exec(batchCmd)
	f.Exec("break layers.1.mlp.gate_up_proj")
	f.Exec("run")
	if got := do("set var "); got != "input|gate|up" {
		t.Errorf("set var at the stop completes to %q, want input|gate|up", got)
	}
	if got := do("set var gate --r"); got != "--rank " {
		t.Errorf("set var flags: %q", got)
	}
}

// TestInputFileLossMaskNoted: `input file` read a training file's rows and
// silently dropped their loss_mask, so a `dump --format specforge` from it
// trained on every token (all-ones mask) with no word said; the batch
// keeps token ids only, so `input` now says how many rows' loss_mask are
// not kept and where they are (`hsdb capture --data`). A file without
// loss_mask gets no note.
func TestInputFileLossMaskNoted(t *testing.T) {
	f := newFake(t, 1)
	dir := t.TempDir()
	masked := filepath.Join(dir, "m.jsonl")
	writeFile(t, masked, `{"input_ids": [1, 403, 407], "loss_mask": [0, 1, 1]}`+"\n"+`{"input_ids": [1, 400]}`+"\n"+`{"input_ids": [1, 400], "loss_mask": null}`+"\n")
	f.AssertExec("input file "+masked, "seq 2: [1, 400]", "note: "+masked+": the loss_mask of 1 row is not kept")
	res := f.jsonExec("input file " + masked)[0]["result"].(map[string]any)
	if notes, _ := res["notes"].([]any); len(notes) != 1 {
		t.Errorf("--json notes: %v", res["notes"])
	}
	plain := filepath.Join(dir, "p.jsonl")
	writeFile(t, plain, `{"input_ids": [1, 403, 407]}`+"\n")
	if out := f.Exec("input file " + plain); strings.Contains(out, "note:") {
		t.Errorf("a file without loss_mask is noted:\n%s", out)
	}
}

// TestUndisplaySaysWhat: `undisplay 1` answered "no displays", the words
// of `info display` with none set, so removing the last display read as
// if there had been none; it now says which it removed and what is left,
// as delete does.
func TestUndisplaySaysWhat(t *testing.T) {
	f := newFake(t, 1)
	f.Exec("display stream")
	f.Exec("display residual")
	f.AssertExec("undisplay 1", "deleted display 1; left:\n", "2   residual")
	f.AssertExec("undisplay", "deleted display 2; no displays left")
	f.AssertExec("undisplay", "deleted nothing; no displays left")
}

// TestTopNoFiniteValue: `top` over a tensor holding only NaN (set var
// writes them) printed "median |value| 0" and an empty table, as if the
// values were zeros; it now says there is no finite value to rank.
func TestTopNoFiniteValue(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	f.Exec("set var stream = nan")
	out := f.AssertExec("top stream 3", "no finite value, nothing to rank")
	if strings.Contains(out, "median") {
		t.Errorf("top of NaN shows a median:\n%s", out)
	}
	f.Exec("set var hidden_states = 0")
	f.AssertExec("top hidden_states 3", "median |value| 0 (no ratio to a zero median") // zeros are values: ranked
}

// TestHFModuleNamesFused: an HF module path whose module vLLM fuses
// (q_proj, k_proj, v_proj into qkv_proj; gate_proj, up_proj into
// gate_up_proj; DeepSeek's q_a_proj and kv_a_proj_with_mqa into
// fused_qkv_a_proj) matched no site and the error said only that; it now
// names the site standing for it and the tensor holding the module's
// output, for break and for capture site (whose error did not even list
// the layers).
func TestHFModuleNamesFused(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("break layers.0.self_attn.k_proj", "HF's k_proj is fused into vLLM's qkv_proj here: layers.0.self_attn.qkv_proj (tensor k)")
	f.AssertError("break layers.*.mlp.gate_proj", "HF's gate_proj is fused into vLLM's gate_up_proj here: layers.*.mlp.gate_up_proj (tensor gate)")
	f.AssertError("capture site layers.1.mlp.up_proj up", "HF's up_proj is fused into vLLM's gate_up_proj here: layers.1.mlp.gate_up_proj (tensor up)")
	f.AssertError("capture site layers.9.mlp output", "matches no site of this model (layers 0-4;")
	f.AssertExec("break layers.0.self_attn.qkv_proj", "Breakpoint 1 at layers.0.self_attn.qkv_proj (1 site)")
	ds := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{})
	ds.AssertError("break layers.0.self_attn.q_a_proj", "HF's q_a_proj is fused into vLLM's fused_qkv_a_proj here: layers.0.self_attn.fused_qkv_a_proj (tensor q_c)")
}

// TestWatchBareComparison: gdb's `watch x > 3` form, `watch stream > 3`,
// was answered from the condition lexer ("column 1: expected a number, a
// name or '(', found \">\""); a tensor has no one value to compare, and
// the refusal now says to compare a statistic, with the command to type.
func TestWatchBareComparison(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("watch stream > 3", "watch stream > 3: a condition compares a statistic of the tensor: watch stream absmax > 3")
	f.AssertExec("watch stream absmax > 3", "Watch 1: stream absmax > 3")
}

// TestCompareMismatchNamesCompare: `compare DUMP` over a batch with a
// sequence the dump lacks said "compare: patch does not fit: ...", naming
// patch, a command the user did not type; the error says the dump does
// not fit the batch, for compare and patch alike.
func TestCompareMismatchNamesCompare(t *testing.T) {
	f := newFake(t, 1)
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec(batchCmd)
	f.Exec("capture layers 3")
	f.Exec("run")
	f.Exec("dump " + dir)
	f.Exec(batchCmd + " ; ids 1,2")
	f.Exec("break layers.3")
	f.AssertExec("run", "Stopped at model.layers.3 ")
	for _, c := range []string{"compare " + dir, "patch stream from " + dir} {
		f.buf.Reset()
		err := f.Term.Exec(c)
		if err == nil || strings.Contains(err.Error(), "patch does not fit") || !strings.Contains(err.Error(), "the dump does not fit the batch") || !strings.Contains(err.Error(), "no sequence 2") {
			t.Errorf("%s: %v", c, err)
		}
	}
}

// TestCheckOneRankDump: check of an hsdb dump written at --tp 1 said "the
// file records no cross-rank check (only hsdb dumps do)" of a file that is
// an hsdb dump; it says the dump ran on one rank, as dump's own
// validation does ("one rank"). A file checked alone is told where an
// hsdb dump keeps the check (TestCheckDumpFileAlone).
func TestCheckOneRankDump(t *testing.T) {
	f := newFake(t, 1)
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec(batchCmd)
	f.Exec("capture layers 1")
	f.Exec("run")
	f.AssertExec("dump "+dir, "skip  replicas equal    one rank")
	out := f.AssertExec("check "+dir, "skip  replicas equal    the dump ran on one rank (tp 1): no replicas to compare")
	if strings.Contains(out, "records no cross-rank check") {
		t.Errorf("check of an hsdb dump says only hsdb dumps record the check:\n%s", out)
	}
	f.assertVerdictFails("check ../testdata/captures/good.safetensors --no-model", "the file records no cross-rank check (an hsdb dump keeps it in its manifest.json")
}

// TestIndexWrittenApart: `print stream [0, :2]` (a space before the
// index, as gdb's expressions allow) was "unexpected \"[0,\"" and numpy's
// `stream[0][1]` an unexplained "unexpected \"[1]\""; the first reads as
// stream[0, :2] (print, set var, display), the second says to write one
// index. The value printed is the one set var wrote by hand.
func TestIndexWrittenApart(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.2")
	f.AssertExec("run", "Stopped at model.layers.2 ")
	f.AssertExec("set var stream [0, 1] = 7", "stream[0:1, 1:2] = 7 ")
	f.AssertExec("print stream [0, 1]", "0: [7]")
	f.AssertExec("print stream  [0, 1] --rank 0", "rank 0  [0:1, 1:2]")
	f.AssertError("print stream[0][1]", "one index holds rows and columns, stream[0, 1]")
}

// TestInfoBatchNamesItself: `info batch` before any input failed with
// "input: no batch yet", naming `input`; it names the command typed.
func TestInfoBatchNamesItself(t *testing.T) {
	f := newFake(t, 1)
	f.AssertError("info batch", "info batch: no batch yet")
	f.Exec("input ids 1,2")
	f.AssertExec("info batch", "seq 0: [1, 2]")
}

// TestCheckEndsOnVerdict: the REPL's check and diff printed the report,
// whose last line is already the verdict, and then a bare "valid" or
// "invalid" (a file nothing could be compared in, which hsdb check calls
// "unreadable or nothing comparable", was "invalid"). The output now ends
// on the report's own verdict line, as hsdb check prints it: good.safetensors
// (the fixture generator's valid capture) is "valid"; reference.safetensors
// (HF's reference values: no hidden-state entries to compare) is
// "unreadable or nothing comparable".
func TestCheckEndsOnVerdict(t *testing.T) {
	f := newHFFake(t, 1)
	for _, c := range []struct{ cmd, last string }{
		{"check ../testdata/captures/good.safetensors --no-model", "  verdict: valid"},
		{"diff ../testdata/captures/good.safetensors", "  verdict: valid"},
		{"check ../testdata/captures/reference.safetensors", "  verdict: unreadable or nothing comparable"},
	} {
		out, failed := f.execVerdict(c.cmd)
		if failed != (c.last != "  verdict: valid") {
			t.Errorf("%s: failed %v, want a failure exactly when the verdict is not valid", c.cmd, failed)
		}
		out = strings.TrimRight(out, "\n")
		lines := strings.Split(out, "\n")
		if got := lines[len(lines)-1]; got != c.last {
			t.Errorf("%s: last line %q, want %q\n%s", c.cmd, got, c.last, out)
		}
	}
}

// TestInputFileTextLossMask: a text row with a loss_mask got the note
// "`hsdb capture --data F` keeps it", but capture refuses that row ("loss_mask
// needs input_ids": a text's tokens are not known in advance). The note
// now says so and names the first such line (line 2 here, by hand).
func TestInputFileTextLossMask(t *testing.T) {
	f := newFake(t, 1)
	p := filepath.Join(t.TempDir(), "t.jsonl")
	writeFile(t, p, `{"input_ids": [1, 403], "loss_mask": [0, 1]}`+"\n"+`{"text": "Once", "loss_mask": [1, 1]}`+"\n")
	out := f.AssertExec("input file "+p, "the loss_mask of 2 rows is not kept", "refuses one on a text row (line 2: a text's tokens are not known in advance; give input_ids)")
	if strings.Contains(out, "keeps it") {
		t.Errorf("note promises capture keeps a text row's loss_mask:\n%s", out)
	}
}

// dumpedFake is a one-rank fake debugger that has run the batch of
// batchCmd with layer 1 captured and dumped it: the debugger and the dump
// directory.
func dumpedFake(t *testing.T) (*fakeTerm, string) {
	f := newFake(t, 1)
	dir := filepath.Join(t.TempDir(), "d")
	f.Exec(batchCmd)
	f.Exec("capture layers 1")
	f.Exec("run")
	f.Exec("dump " + dir)
	return f, dir
}
