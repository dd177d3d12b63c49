package main

import (
	"encoding/json"
	"flag"
	"reflect"
	"strings"
	"testing"
)

// TestFlagFailuresUnderJSON: a user trial found `hsdb plan --model
// testdata/configs/deepseek-v3 --json --bogus` and `... --json --tp 8 --tp
// 4` printing plain text on stderr and nothing on stdout, though README
// promises "a failure: one object with command, error and exit on stdout,
// in every command" and `--json --tp 0` did so. A flag-parsing failure
// (unknown flag, one given twice, one without its value or with a value it
// does not take), wherever --json stands, is now the command's one failure
// object on stdout, exit 2, nothing on stderr: jsonFailure's keys for
// plan, generate and the debugger, check's and diff's report keys, and
// capture's job keys, as each prints its other failures. So are the
// argument errors said before --json was parsed (check with no PATH, an
// extra argument before --json).
func TestFlagFailuresUnderJSON(t *testing.T) {
	cfg := "../../testdata/configs/deepseek-v3"
	fail := func(cmd, msg string) map[string]any {
		return map[string]any{"command": cmd, "error": msg, "exit": 2.0}
	}
	checkFail := func(cmd, path, msg string) map[string]any {
		return map[string]any{"command": cmd, "path": path, "failed": true, "lines": []any{}, "files": 0.0, "exit": 2.0, "error": msg}
	}
	for _, c := range []struct {
		args []string
		want map[string]any
	}{
		{[]string{"plan", "--model", cfg, "--json", "--bogus"}, fail("plan", "unknown flag --bogus")},
		{[]string{"plan", "--model", cfg, "--json", "--tp", "8", "--tp", "4"}, fail("plan", `--tp "4": given twice, first as "8": each flag takes one value`)},
		{[]string{"plan", "--bogus", "--json=true"}, fail("plan", "unknown flag --bogus")},
		{[]string{"plan", "-json", "--max-token", "3"}, fail("plan", "unknown flag --max-token: did you mean --max-tokens?")},
		{[]string{"plan", "--json", "--tp"}, fail("plan", "--tp needs a value")},
		{[]string{"plan", "--json", "--tp", "x"}, fail("plan", `--tp "x": want a whole number`)},
		{[]string{"generate", "--bogus", "--json"}, fail("generate", "unknown flag --bogus")},
		{[]string{"generate", "--json", "--prompt", "a", "--prompt", "b"}, fail("generate", `--prompt "b": given twice, first as "a": each flag takes one value`)},
		{[]string{"generate", "--json", "--seed", "x"}, fail("generate", `--seed "x": want a whole number >= 0`)},
		{[]string{"generate", "extra", "--json"}, fail("generate", `unexpected arguments ["extra" "--json"] (the prompt goes in --prompt or --ids)`)},
		{[]string{"plan", "extra", "--json"}, fail("plan", `unexpected arguments ["extra" "--json"]`)},
		{[]string{"--json", "--bogus"}, fail("hsdb", "unknown flag --bogus")},
		{[]string{"--tp", "2", "--json=1", "--tp", "4"}, fail("hsdb", `--tp "4": given twice, first as "2": each flag takes one value`)},
		{[]string{"--json", "--layers", "3"}, fail("hsdb", `--layers "3": --layers names the layers a capture holds (capture, check, diff); to load only decoder layers 3 use --load-layers 3`)},
		{[]string{"--json", "extra"}, fail("hsdb", "unexpected \"extra\" (`hsdb help` lists the subcommands)")},
		{[]string{"check", "x.pt", "--json", "--bogus"}, checkFail("check", "x.pt", "unknown flag --bogus")},
		{[]string{"check", "x.pt", "--tp", "1", "--tp", "2", "--json"}, checkFail("check", "x.pt", `--tp "2": given twice, first as "1": each flag takes one value`)},
		{[]string{"check", "--json"}, checkFail("check", "", "no PATH given")},
		{[]string{"check", "a.pt", "b.pt", "--json"}, checkFail("check", "a.pt", `PATH: one expected, got "a.pt" and "b.pt"`)},
		{[]string{"diff", "--json", "--tp"}, checkFail("diff", "", "--tp needs a value")},
		{[]string{"capture", "--bogus", "--json"}, map[string]any{"command": "capture", "out": "", "error": "unknown flag --bogus", "exit": 2.0,
			"captured": 0.0, "skipped": 0.0, "total": 0.0, "tokens": 0.0, "seconds": 0.0, "format": "", "notes": []any{}}},
		{[]string{"capture", "--json", "--out", "d", "x"}, map[string]any{"command": "capture", "out": "d", "error": `unexpected argument "x"`, "exit": 2.0,
			"captured": 0.0, "skipped": 0.0, "total": 0.0, "tokens": 0.0, "seconds": 0.0, "format": "", "notes": []any{}}},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != 2 || errs != "" {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and nothing on stderr", c.args, code, errs)
		}
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("%q: stdout %q, want one line", c.args, out)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("%q: stdout is not one JSON object (%v): %q", c.args, err, out)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: stdout\n%v\nwant\n%v", c.args, got, c.want)
		}
	}
}

// TestFlagFailuresWithoutJSON: without --json asked for (--json=false,
// a --json after "--", or a command that takes no --json) a bad flag is
// still said on stderr in text, nothing on stdout, exit 2.
func TestFlagFailuresWithoutJSON(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--bogus", "--json=false"}, "hsdb plan: unknown flag --bogus\nhsdb plan --help lists the flags\n"},
		{[]string{"plan", "--json=maybe"}, "hsdb plan: --json \"maybe\": want true or false\nhsdb plan --help lists the flags\n"},
		{[]string{"--bogus", "--", "--json"}, "hsdb: unknown flag --bogus\nhsdb --help lists the flags\n"},
		{[]string{"worker", "--json"}, "hsdb worker: unknown flag --json\nhsdb worker --help lists the flags\n"},
		{[]string{"check", "--tp", "2"}, "hsdb check: no PATH given\n"},
	} {
		out, errs, code := runHsdb(t, c.args...)
		if code != 2 || out != "" || errs != c.want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, stderr %q", c.args, code, out, errs, c.want)
		}
	}
}

// TestJSONAsked: which arguments ask for JSON before (or without) a
// parse: --json, -json and --json=V with V true in strconv.ParseBool's
// spellings, anywhere before a lone "--"; not --json=false, nor a
// longer or mistyped name, nor a flag set without --json.
func TestJSONAsked(t *testing.T) {
	fs := newFlagSet("t")
	fs.Bool("json", false, "")
	fs.Int("tp", 1, "")
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--json"}, true},
		{[]string{"-json"}, true},
		{[]string{"--json=true"}, true},
		{[]string{"--json=1"}, true},
		{[]string{"--json=T"}, true},
		{[]string{"--bogus", "x", "--json"}, true},
		{[]string{"--json", "--json=false"}, true},
		{[]string{"--json=false"}, false},
		{[]string{"--json=0"}, false},
		{[]string{"--json=maybe"}, false},
		{[]string{"--", "--json"}, false},
		{[]string{"---json"}, false},
		{[]string{"--jsonl"}, false},
		{[]string{"json"}, false},
		{nil, false},
	} {
		if got := jsonAsked(fs, c.args); got != c.want {
			t.Errorf("jsonAsked(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	if jsonAsked(flag.NewFlagSet("worker", flag.ContinueOnError), []string{"--json"}) {
		t.Error("jsonAsked: true for a flag set without --json")
	}
}
