package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONFailuresAreOneObject: with --json, a command that fails after
// its flags parsed prints one JSON object on stdout naming the command,
// the error and the exit status, as check and diff do (README: "--json
// one JSON object"), for capture, plan and generate alike; a script that
// parses stdout never gets empty output from a failure. The cases are
// inputs each command refuses (a missing model, a layer the model does
// not have, a config field of the wrong type, an id outside the
// vocabulary); the expected phrases are the inputs' own.
func TestJSONFailuresAreOneObject(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "badcfg")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "config.json"), []byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": "96"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nonexistent")
	cases := []struct {
		name string
		args []string
		want string // in the error
		cmd  string // the command field, when not args[0]
	}{
		{"check bad model", []string{"check", dir, "--model", missing, "--json"}, missing, ""},
		{"capture bad model", []string{"capture", "--model", missing, "--ids", "1,2", "--out", filepath.Join(dir, "d1"), "--json"}, missing, ""},
		{"capture bad layer", []string{"capture", "--ids", "1,2", "--layers", "99", "--out", filepath.Join(dir, "d2"), "--json"}, "--layers 99", ""},
		{"capture no out", []string{"capture", "--ids", "1,2", "--json"}, "--out", ""},
		{"capture bad data", []string{"capture", "--layers", "1", "--data", missing, "--out", filepath.Join(dir, "d3"), "--json"}, missing, ""},
		{"plan no config", []string{"plan", "--model", missing, "--json"}, missing, ""},
		{"plan wrong type", []string{"plan", "--model", bad, "--json"}, "hidden_size", ""},
		{"plan pp", []string{"plan", "--model", bad, "--pp", "2", "--json"}, "hidden_size", ""},
		{"generate bad id", []string{"generate", "--ids", "1,99999", "-n", "3", "--json"}, "99999", ""},
		{"generate bad model", []string{"generate", "--model", missing, "--json"}, missing, ""},
		{"debugger bad model", []string{"--model", missing, "--json", "-x", os.DevNull}, missing, "hsdb"},
		{"debugger missing script", []string{"--json", "-x", missing}, missing, "hsdb"}, // refused before the model loads
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := hsdbMain(c.args, stdio{Out: &out, Err: &errOut})
		if code == 0 {
			t.Errorf("%s: exit 0, want a failure; stdout %q", c.name, out.String())
			continue
		}
		dec := json.NewDecoder(strings.NewReader(out.String()))
		var got struct {
			Command *string `json:"command"`
			Error   *string `json:"error"`
			Exit    *int    `json:"exit"`
		}
		if err := dec.Decode(&got); err != nil {
			t.Errorf("%s: exit %d, stdout is not a JSON object (%v): %q; stderr %q", c.name, code, err, out.String(), errOut.String())
			continue
		}
		if dec.More() {
			t.Errorf("%s: more than one JSON value on stdout: %q", c.name, out.String())
		}
		wantCmd := c.cmd
		if wantCmd == "" {
			wantCmd = c.args[0]
		}
		if got.Command == nil || *got.Command != wantCmd {
			t.Errorf("%s: command %v, want %q", c.name, got.Command, wantCmd)
		}
		// the debugger's command failures are the REPL's {"command", "error"}
		if got.Exit == nil && strings.HasPrefix(wantCmd, "source ") {
			got.Exit = &code
		}
		if got.Exit == nil || *got.Exit != code {
			t.Errorf("%s: exit field %v, the process exits %d", c.name, got.Exit, code)
		}
		if got.Error == nil || !strings.Contains(*got.Error, c.want) {
			t.Errorf("%s: error %v, want it to name %q", c.name, got.Error, c.want)
		}
	}
}
