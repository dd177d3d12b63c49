package main

import (
	"bytes"
	"strings"
	"testing"
)

func runWithStdin(args []string, stdin string) (int, string, string) {
	var out, errb bytes.Buffer
	code := hsdbMain(args, stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestQuickstartScript: README's main job, `hsdb -x scripts/quickstart.hsdb`,
// on the embedded model at --tp 1 and --tp 2: it stops at layer 2, prints
// the three tensors on every rank, walks into layer 3's MLP and finishes.
func TestQuickstartScript(t *testing.T) {
	for _, tp := range []string{"1", "2"} {
		code, out, errs := runWithStdin([]string{"--tp", tp, "-x", "../../scripts/quickstart.hsdb"}, "")
		if code != 0 {
			t.Fatalf("--tp %s: exit %d\n%s\n%s", tp, code, out, errs)
		}
		for _, w := range []string{
			"path               embedded:stories260K",
			"Stopped at model.layers.2 (LlamaDecoderLayer)  step 0 (prefill)  tokens 10 (seq 0: 6, seq 1: 4)  [breakpoint 1]",
			"model.layers.2 hidden_states", "model.layers.2 residual", "model.layers.2 stream",
			"#0  model.layers.2  LlamaDecoderLayer", "#2  (root)  LlamaForCausalLM",
			"Stopped at model.layers.3.mlp.gate_up_proj (MergedColumnParallelLinear)",
			"Stopped at model.layers.3.mlp (LlamaMLP)", "[finish model.layers.3.mlp]",
			"Finished: prefill",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("--tp %s: output lacks %q", tp, w)
			}
		}
		if tp == "2" && !strings.Contains(out, "gathered  [10, 172]") {
			t.Errorf("--tp 2: no gathered row for gate")
		}
	}
}

// TestStdinScript: with stdin not a terminal and no -x, hsdb runs the
// commands it reads; --json makes each result one JSON line.
func TestStdinScript(t *testing.T) {
	code, out, errs := runWithStdin([]string{"--json"}, "input ids 1,2,3\nrun\n")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], `{"command":"run","kind":"done","result":{"prefill":true`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

func TestBadInvocations(t *testing.T) {
	// A --tp the model cannot be split over is a usage error (exit 2, as
	// in every command: TestModelFitUsage), not a load that failed.
	if code, _, errs := runWithStdin([]string{"--tp", "3"}, ""); code != 2 || !strings.Contains(errs, "num_attention_heads 8 is not divisible by --tp 3") {
		t.Errorf("--tp 3: exit %d %s", code, errs)
	}
	if code, _, errs := runWithStdin([]string{"--model", "/nonexistent/model.bin"}, ""); code != 2 || !strings.Contains(errs, "/nonexistent/model.bin") {
		t.Errorf("bad model: exit %d %s", code, errs)
	}
	if code, _, _ := runWithStdin([]string{"--frobnicate"}, ""); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
	if code, _, errs := runWithStdin([]string{"-x", "/nonexistent.hsdb"}, ""); code != 2 || !strings.Contains(errs, "/nonexistent.hsdb") {
		t.Errorf("missing script: exit %d %s", code, errs)
	}
}

// TestDTypeFlagReachesInfoModel: --dtype bf16 on the float32 llama fixture
// (29 tensors) shows in info model as the dtype the weights are kept in,
// next to the stored f32.
func TestDTypeFlagReachesInfoModel(t *testing.T) {
	code, out, errs := runWithStdin([]string{"--model", "../../testdata/hf/llama", "--dtype", "bf16"}, "info model\n")
	if code != 0 || !strings.Contains(out, "weights stored     f32 29 tensors\n") || !strings.Contains(out, "weights kept as    bf16 29 tensors (--dtype bf16)\n") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestScriptExitStatus: a failure stays in the exit status when the script
// then quits.
func TestScriptExitStatus(t *testing.T) {
	if code, out, _ := runWithStdin(nil, "set errors continue\nprint x\nquit\n"); code != 1 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if code, out, _ := runWithStdin(nil, "echo fine\nquit\n"); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
