package check

import (
	"encoding/json"
	"sort"
	"strings"
)

// finding is one group of a summary: the files counted under one key
// (findingOf), in the path's order.
type finding struct {
	key   string
	files []*Report
}

// findings groups p's files by finding (findingOf), most frequent first
// (ties in the order first met): what SummaryLines and SummaryJSON list.
func (p *PathReport) findings() []*finding {
	idx := map[string]*finding{}
	var gs []*finding
	for _, f := range p.Files {
		k := findingOf(f)
		g := idx[k]
		if g == nil {
			g = &finding{key: k}
			idx[k] = g
			gs = append(gs, g)
		}
		g.files = append(g.files, f)
	}
	sort.SliceStable(gs, func(i, j int) bool { return len(gs[i].files) > len(gs[j].files) })
	return gs
}

// summaryWhy is what a summary says after a listed file's path: its first
// diagnosis, else why it could not be read, else its first failing
// rule and that rule's detail, else "".
func (r *Report) summaryWhy() string {
	switch {
	case len(r.Diagnoses) > 0:
		return r.Diagnoses[0].Sentence
	case r.Err != nil:
		return r.errText()
	}
	if x, ok := firstFailed(r); ok { // no diagnosis (a layer count, a dtype): the rule's own detail
		return x.Rule + ": " + x.Detail
	}
	return ""
}

// SummaryJSON is `check --json --summary`'s (and diff's) one object for a
// path: the summary SummaryLines prints, as data. Findings are most
// frequent first, each with its count and its first files; Rules are the
// directory's own (a dump's manifest against its files).
type SummaryJSON struct {
	Command  string        `json:"command"` // check or diff
	Path     string        `json:"path"`
	Verdict  string        `json:"verdict"`
	Exit     int           `json:"exit"`  // the verdict as check's and diff's exit code
	Files    int           `json:"files"` // capture files the path holds
	Error    string        `json:"error,omitempty"`
	Findings []FindingJSON `json:"findings"`
	Rules    []RuleJSON    `json:"rules"`
}

// FindingJSON is one finding of a summary: "valid", "unreadable",
// "nothing comparable" or "FAIL " and the failing rules; how many files
// have it and the first of them.
type FindingJSON struct {
	Finding string        `json:"finding"`
	Count   int           `json:"count"`
	First   []SummaryFile `json:"first"`
}

// SummaryFile is a file a summary lists under its finding, with its first
// diagnosis or why it could not be read ("" when neither).
type SummaryFile struct {
	Path string `json:"path"`
	Why  string `json:"why,omitempty"`
}

// SummaryJSONLine renders p as one SummaryJSON object (check when diff is
// false), listing up to show files per finding.
func (p *PathReport) SummaryJSONLine(diff bool, show int) string {
	cmd := "check"
	if diff {
		cmd = "diff"
	}
	v := p.Verdict()
	s := SummaryJSON{Command: cmd, Path: p.Path, Verdict: v.String(), Exit: int(v), Files: len(p.Files), Findings: []FindingJSON{}, Rules: []RuleJSON{}}
	if p.Err != nil {
		s.Error = p.Err.Error()
	} else {
		for _, g := range p.findings() {
			fj := FindingJSON{Finding: g.key, Count: len(g.files), First: []SummaryFile{}}
			for _, f := range g.files[:min(show, len(g.files))] {
				fj.First = append(fj.First, SummaryFile{Path: f.Path, Why: f.summaryWhy()})
			}
			s.Findings = append(s.Findings, fj)
		}
		for _, x := range p.Rules {
			s.Rules = append(s.Rules, RuleJSON{Rule: x.Rule, Status: strings.ToLower(x.Status.String()), Detail: x.Detail})
		}
	}
	b, _ := json.Marshal(s)
	return string(b)
}
