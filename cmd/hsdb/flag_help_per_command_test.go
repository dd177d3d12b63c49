package main

import (
	"strings"
	"testing"
)

// flagHelpLine is the meaning --help gives for --name in out (the text
// after "  --name TYPE" and the column's spaces), and whether it is there.
func flagHelpLine(out, name string) (string, bool) {
	for _, l := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(l, "  --"+name+" ")
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, " ")
		if typ, text, ok := strings.Cut(rest, " "); ok && (typ == "string" || typ == "int" || typ == "duration") {
			rest = text
		}
		return strings.TrimLeft(rest, " "), true
	}
	return "", false
}

// TestFlagHelpPerCommand: a user trial found `hsdb plan --help` describing
// the shared flags as other commands use them: --json "(the debugger: one
// object per command result)", --tp "(check, diff: ... try 2, 4, 8, 16)",
// --model "(check: empty means no model)", --load-layers "load only"
// though plan loads nothing. Each command's --help now words a shared
// flag as that command takes it (flagUsageFor), and no line of plan's
// help speaks of another command's use.
func TestFlagHelpPerCommand(t *testing.T) {
	for _, c := range []struct {
		args       []string
		flag, want string
	}{
		{[]string{"plan", "--help"}, "json", "print the plan as one JSON object (--pp: one for all stages); a failure: one object with command, error and exit"},
		{[]string{"plan", "--help"}, "tp", "tensor-parallel world size (ranks) planned: each rank's share of the weights, KV cache and activations (default 1)"},
		{[]string{"plan", "--help"}, "load-layers", "plan only decoder layers A-B (with embeddings, final norm and head), as --load-layers loads them, e.g. 58-60"},
		{[]string{"plan", "--help"}, "model", `the model planned, nothing of it loaded: an HF directory (config.json is enough; the safetensors' headers, where present, give the stored dtypes), a llama2.c .bin (its header), "embedded" or empty for the embedded stories260K`},
		{[]string{"check", "--help"}, "tp", "tensor-parallel world size the capture ran at, for shard forensics, and the model runs at (not given: the model runs at 1 and the forensics try 2, 4, 8, 16)"},
		{[]string{"check", "--help"}, "layers", "layers expected in the capture, in order, as hsdb's decoder layer numbers whatever the file's format, e.g. 2,30,58,60"},
		{[]string{"diff", "--help"}, "model", `the model whose forward pass the capture is compared with (required): an HF directory (config.json + safetensors), a llama2.c .bin or "embedded" for the embedded stories260K`},
		{[]string{"generate", "--help"}, "tp", "tensor-parallel world size (ranks) the model runs at (default 1)"},
		{[]string{"generate", "--help"}, "model", `model: an HF directory (config.json + safetensors), a llama2.c .bin, "embedded" or empty for the embedded stories260K`},
		{[]string{"capture", "--help"}, "json", "print the job's summary as one JSON object; a failure: the same object with error and exit"},
		{[]string{"--help"}, "json", "print each debugger command's result as one JSON object a line ({command, kind, result}; an error: {command, error}), and a failure before the session starts as one object with command, error and exit"},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", c.args, code, errs)
		}
		got, ok := flagHelpLine(out, c.flag)
		if !ok || got != c.want {
			t.Errorf("%q: --%s says\n%q\nwant\n%q", c.args, c.flag, got, c.want)
		}
	}
	out, _, _ := runHsdb(t, "plan", "--help")
	for _, bad := range []string{"the debugger:", "check, diff", "check:", "load only"} {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, bad) {
				t.Errorf("plan --help speaks of another command (%q): %s", bad, l)
			}
		}
	}
}
