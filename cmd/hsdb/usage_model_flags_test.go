package main

import (
	"os"
	"strings"
	"testing"
)

// TestUsageNamesModelFlags: the usage line `hsdb --help` and `hsdb plan
// --help` print first names every model flag that changes what is loaded
// or planned (--moe is --ep's other spelling; the worker flags are the
// debugger's alone), and README's plan synopsis does too. --w8a8, which
// changes plan's activation bytes and a load's numerics, was in the flag
// lists but in neither usage line.
func TestUsageNamesModelFlags(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var synopsis string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "    hsdb plan [--model DIR]") {
			synopsis = l
		}
	}
	flags := []string{"--model", "--tp", "--device", "--dtype", "--ep", "--w8a8", "--load-layers", "--pp"}
	for _, c := range []struct{ what, text string }{
		{"hsdb --help", helpUsage(t)},
		{"hsdb plan --help", helpUsage(t, "plan")},
		{"README's plan synopsis", synopsis},
	} {
		for _, f := range flags {
			if !strings.Contains(c.text, "["+f+" ") && !strings.Contains(c.text, "["+f+"]") && !strings.Contains(c.text, " "+f+" ") {
				t.Errorf("%s does not name %s: %q", c.what, f, c.text)
			}
		}
	}
}

// helpUsage returns the usage line of `hsdb [CMD] --help`: the first line
// that starts with "usage" or the line after it.
func helpUsage(t *testing.T, cmd ...string) string {
	t.Helper()
	out, errs, _ := runHsdb(t, append(cmd, "--help")...)
	lines := strings.Split(out+errs, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "usage:") {
			if strings.TrimSpace(l) == "usage:" && i+1 < len(lines) {
				return lines[i+1]
			}
			return l
		}
	}
	t.Fatalf("hsdb %v --help prints no usage line:\n%s%s", cmd, out, errs)
	return ""
}
