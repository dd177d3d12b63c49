package main

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

// TestCase19BarStopsWhereItWas: cases/README.md case 19 — a job that ends
// without finishing (Ctrl-C) leaves the progress bar at the count it
// reached (47/2000), never redrawn full; a finished job fills it.
func TestCase19BarStopsWhereItWas(t *testing.T) {
	for _, completed := range []bool{false, true} {
		var buf bytes.Buffer
		p := &progress{w: &buf, bar: newBar(&buf, 2000)}
		p.bar.Set(47)
		p.finish(completed)
		out := buf.String()
		full := strings.Contains(out, "2000/2000") || strings.Contains(out, "100%")
		if full != completed {
			t.Fatalf("completed %v: the bar drew %q", completed, out)
		}
	}
}

// TestCase20SharedFlags: case 20 — the shared flags are accepted alike:
// check --no-model, diff --ep, --json on check, diff and capture (each one
// JSON object with snake_case keys and the exit status); `hsdb --help` and
// `hsdb CMD --help` list the flags (exit 0); --version prints the version
// and the commit.
func TestCase20SharedFlags(t *testing.T) {
	good := "../../testdata/captures/good_speculators.pt"
	out, errs, code := runHsdb(t, "check", good, "--no-model")
	if code != 0 || !strings.Contains(out, "pass  structure") {
		t.Fatalf("check --no-model: exit %d\n%s\n%s", code, out, errs)
	}
	out, _, code = runHsdb(t, "check", good, "--no-model", "--json")
	var cr map[string]any
	if err := json.Unmarshal([]byte(out), &cr); err != nil || code != 0 || cr["command"] != "check" || cr["exit"] != float64(0) {
		t.Fatalf("check --json: exit %d, %v: %s", code, err, out)
	}
	// --ep is a model flag of diff as of every command that loads a model:
	// on the DeepSeek-V3 fixture (routed experts) it loads and compares.
	out, errs, code = runHsdb(t, "diff", "../../testdata/hf/deepseek_v3/reference.safetensors", "--model", "../../testdata/hf/deepseek_v3", "--ep", "--tp", "2", "--json")
	var dr struct {
		Command string   `json:"command"`
		Exit    int      `json:"exit"`
		Lines   []string `json:"lines"`
	}
	if err := json.Unmarshal([]byte(out), &dr); err != nil || dr.Command != "diff" || dr.Exit != code || code != 0 {
		t.Fatalf("diff --ep --json: exit %d, %v:\n%s\n%s", code, err, out, errs)
	}
	if !strings.Contains(strings.Join(dr.Lines, "\n"), "no departure") {
		t.Fatalf("diff --ep: %v", dr.Lines)
	}
	dir := t.TempDir()
	out, errs, code = runHsdb(t, "capture", "--layers", "1", "--ids", "1,2,3", "--out", dir+"/o", "--json")
	var capr map[string]any
	if err := json.Unmarshal([]byte(out), &capr); err != nil || code != 0 || capr["sequences"] != float64(1) || capr["out"] != dir+"/o" {
		t.Fatalf("capture --json: exit %d, %v:\n%s\n%s", code, err, out, errs)
	}
	for k := range capr {
		if k != strings.ToLower(k) {
			t.Fatalf("capture --json key %q is not snake_case", k)
		}
	}
	out, _, code = runHsdb(t, "--help")
	for _, want := range []string{"--load-layers", "--model", "--json", "-x string", "hsdb capture", "hsdb --version"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("hsdb --help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, hiddenUsage) {
		t.Fatalf("hsdb --help lists a hidden flag:\n%s", out)
	}
	for cmd, want := range map[string][]string{
		"check":    {"--no-model", "--layers", "--seq-lens", "--ep", "--json"},
		"diff":     {"--ep", "--layers", "--json"},
		"capture":  {"--layers", "--load-layers", "--out", "--force", "--json"},
		"generate": {"--load-layers", "--json", "--prompt"},
	} {
		out, _, code := runHsdb(t, cmd, "--help")
		for _, w := range want {
			if code != 0 || !strings.Contains(out, w+" ") {
				t.Fatalf("hsdb %s --help (exit %d) lacks %s:\n%s", cmd, code, w, out)
			}
		}
	}
	out, _, code = runHsdb(t, "--version")
	bi, ok := debug.ReadBuildInfo()
	if code != 0 || !ok || !strings.HasPrefix(out, "hsdb ") || !strings.Contains(out, bi.GoVersion) {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

// TestVersionLine: the commit comes from the vcs.* settings the Go
// toolchain stamps into a binary built in a git checkout (as `go version
// -m` shows them); a build without them says so.
func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "hsdb", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.time", Value: "2026-12-01T17:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(bi, true), "hsdb v0.4.0, commit 0123456789abcdef (modified), 2026-12-01T17:00:00Z, go1.26.8"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	bi.Settings, bi.Main.Version = nil, ""
	if got := versionLine(bi, true); got != "hsdb (devel), commit unknown (built without VCS information), go1.26.8" {
		t.Fatalf("got %q", got)
	}
}

// TestCase21LoadLayers: case 21 — the load range is --load-layers on every
// command that loads a model; --layers is always the captured (or
// expected) list, and on hsdb and generate, where it once meant the load
// range, it is refused with the hint.
func TestCase21LoadLayers(t *testing.T) {
	for _, args := range [][]string{{"--layers", "2-3", "-x", "/dev/null"}, {"generate", "--layers", "2-3"}} {
		_, errs, code := runHsdb(t, args...)
		if code != 2 || !strings.Contains(errs, "use --load-layers 2-3") {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
	}
	ds := "../../testdata/hf/deepseek_v3" // 4 decoder layers; DeepSeek loads a range
	out, errs, code := runHsdb(t, "generate", "--model", ds, "--load-layers", "0-1", "--ids", "1,2", "-n", "4", "--json")
	if code != 0 || !strings.Contains(out, `"prompt_ids":[1,2]`) {
		t.Fatalf("generate --load-layers: exit %d\n%s\n%s", code, out, errs)
	}
	_, errs, code = runHsdb(t, "generate", "--model", ds, "--load-layers", "2-9", "--ids", "1,2", "-n", "4")
	if code == 0 || !strings.Contains(errs, "the model has decoder layers 0-3") {
		t.Fatalf("generate --load-layers 2-9 on a 4-layer model: exit %d %s", code, errs)
	}
	_, errs, code = runHsdb(t, "generate", "--load-layers", "x", "-n", "4")
	if code == 0 || !strings.Contains(errs, `--load-layers "x": want A-B or A`) {
		t.Fatalf("generate --load-layers x: exit %d %s", code, errs)
	}
}

// TestCase24DiffNothingComparable: case 24 — diff of a file none of whose
// entries align with the model's forward pass over its input_ids (the
// capture fixture's reference.safetensors against testdata/hf/llama) has
// no verdict: exit 2, not 0.
func TestCase24DiffNothingComparable(t *testing.T) {
	out, errs, code := runHsdb(t, "diff", "../../testdata/captures/reference.safetensors", "--model", "../../testdata/hf/llama")
	if code != 2 || !strings.Contains(out, "nothing compared") || !strings.Contains(out, "nothing comparable") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// The same command on a file that aligns still passes (exit 0).
	_, _, code = runHsdb(t, "diff", "../../testdata/hf/llama/reference.safetensors", "--model", "../../testdata/hf/llama")
	if code != 0 {
		t.Fatalf("aligned reference: exit %d", code)
	}
}
