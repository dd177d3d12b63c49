package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckJSONSummary: `hsdb check DIR --json --summary` ignored
// --summary and printed one object per file (README: --summary gives the
// counts per finding and the first files of each). It now prints the
// summary as one JSON object. The dump is made here (two sequences, so two
// files, both valid); the files listed are those the directory holds.
func TestCheckJSONSummary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dump")
	if _, errs, code := runHsdb(t, "capture", "--layers", "0,2", "--ids", "1,403,407;1,400", "--out", dir); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errs)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".safetensors") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) != 2 {
		t.Fatalf("the dump holds %v, want 2 safetensors files", files)
	}
	for _, cmd := range []string{"check", "diff"} {
		args := []string{cmd, dir, "--json", "--summary"}
		if cmd == "diff" {
			args = append(args, "--model", "embedded")
		}
		out, errs, code := runHsdb(t, args...)
		if strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%s --json --summary: %d lines, want one object: %s", cmd, strings.Count(out, "\n"), out)
			continue
		}
		var s struct {
			Command  string `json:"command"`
			Path     string `json:"path"`
			Exit     int    `json:"exit"`
			Files    int    `json:"files"`
			Findings []struct {
				Finding string `json:"finding"`
				Count   int    `json:"count"`
				First   []struct {
					Path string `json:"path"`
				} `json:"first"`
			} `json:"findings"`
			Rules []struct {
				Rule string `json:"rule"`
			} `json:"rules"`
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Errorf("%s: %v: %s", cmd, err, out)
			continue
		}
		var listed []string
		for _, f := range s.Findings {
			for _, x := range f.First {
				listed = append(listed, x.Path)
			}
		}
		slices.Sort(listed)
		if code != 0 || s.Command != cmd || s.Path != dir || s.Exit != 0 || s.Files != 2 || len(s.Findings) != 1 ||
			s.Findings[0].Finding != "valid" || s.Findings[0].Count != 2 || !slices.Equal(listed, files) || len(s.Rules) == 0 {
			t.Errorf("%s --json --summary: exit %d, %+v (stderr %q); want one finding \"valid\" of the 2 files %v and the directory's rules", cmd, code, s, errs, files)
		}
	}
}
