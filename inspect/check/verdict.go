package check

import (
	"encoding/json"
	"fmt"
	"strings"

	"hsdb/inspect/capture"
)

// Verdict is the outcome check and diff share for a file, and their exit
// code: 0 valid, 1 problems found, 2 unreadable or nothing comparable.
type Verdict int

const (
	// VerdictValid: every rule passed (or was skipped for want of input).
	VerdictValid Verdict = iota
	// VerdictProblems: some rule failed.
	VerdictProblems
	// VerdictUnreadable: the file could not be read, or nothing in it
	// could be compared (no hidden states or no input_ids, or a model was
	// given and no entry could be set against its forward pass while no
	// rule failed).
	VerdictUnreadable
)

// String returns "valid", "problems found" or "unreadable or nothing comparable".
func (v Verdict) String() string {
	switch v {
	case VerdictValid:
		return "valid"
	case VerdictProblems:
		return "problems found"
	}
	return "unreadable or nothing comparable"
}

// Verdict returns the file's outcome (see Verdict).
func (r *Report) Verdict() Verdict {
	if r.Err != nil || r.noEntries {
		return VerdictUnreadable
	}
	if r.Failed() {
		return VerdictProblems
	}
	if r.wantModel && len(r.Matches) == 0 {
		return VerdictUnreadable
	}
	return VerdictValid
}

// Verdict of a path is the worst of its files' and its own rules'.
func (p *PathReport) Verdict() Verdict {
	if p.Err != nil || p.Unreadable() {
		return VerdictUnreadable
	}
	if len(p.Files) == 1 && len(p.Rules) == 0 {
		return p.Files[0].Verdict()
	}
	all2 := len(p.Files) > 0
	for _, f := range p.Files {
		all2 = all2 && f.Verdict() == VerdictUnreadable
	}
	if all2 {
		return VerdictUnreadable
	}
	v := VerdictValid
	for _, r := range p.Rules {
		if r.Status == capture.Fail {
			v = VerdictProblems
		}
	}
	for _, f := range p.Files {
		if f.Verdict() != VerdictValid {
			v = VerdictProblems // some files unreadable among readable ones: a problem of the directory
		}
	}
	return v
}

// ConfigFacts reads what check needs of config.json beyond sizes: the
// bos_token_id (hasBOS false when absent or null; a list takes its first)
// and the float constants a fitted scale factor may equal — every number
// whose name holds "scal" or "multiplier" (routed_scaling_factor,
// embedding_multiplier, ...), a nested text_config included. Errors: the
// bytes are not a JSON object.
func ConfigFacts(data []byte) (bos int32, hasBOS bool, consts map[string]float64, err error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return 0, false, nil, fmt.Errorf("config.json: %w", err)
	}
	consts = map[string]float64{}
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for k, v := range m {
			switch x := v.(type) {
			case float64:
				if k == "bos_token_id" && !hasBOS && x >= 0 && x == float64(int32(x)) {
					bos, hasBOS = int32(x), true
				}
				if strings.Contains(k, "scal") || strings.Contains(k, "multiplier") {
					consts[k] = x
				}
			case []any:
				if k == "bos_token_id" && len(x) > 0 && !hasBOS {
					if f, ok := x[0].(float64); ok && f >= 0 && f == float64(int32(f)) {
						bos, hasBOS = int32(f), true
					}
				}
			case map[string]any:
				if k == "text_config" {
					walk(x)
				}
			}
		}
	}
	walk(raw)
	return bos, hasBOS, consts, nil
}

// FileJSON is one file's report as `--json` prints it (one object per
// file, stable snake_case keys).
type FileJSON struct {
	Command     string          `json:"command"` // check or diff
	Path        string          `json:"path"`
	Verdict     string          `json:"verdict"`
	Exit        int             `json:"exit"`  // the verdict as check's and diff's exit code
	Lines       []string        `json:"lines"` // the file's report as the command prints it
	Error       string          `json:"error,omitempty"`
	Format      string          `json:"format,omitempty"`
	Layout      string          `json:"layout,omitempty"`
	SeqLens     []int           `json:"seq_lens,omitempty"`
	Chunks      []int           `json:"chunk_boundaries,omitempty"`
	Rules       []RuleJSON      `json:"rules"`
	Entries     []EntryJSON     `json:"entries"`
	Diagnoses   []DiagnosisJSON `json:"diagnoses"`
	FirstDepart *DepartureJSON  `json:"first_departure,omitempty"`
}

// RuleJSON is one rule's result.
type RuleJSON struct {
	Rule   string `json:"rule"`
	Status string `json:"status"` // pass, fail, skip
	Detail string `json:"detail,omitempty"`
}

// EntryJSON is what one entry is, on values.
type EntryJSON struct {
	Key          string            `json:"key"`
	Layer        int               `json:"layer"` // -1 unlabelled
	Condition    string            `json:"condition,omitempty"`
	ClaimedCos   *float64          `json:"claimed_cos,omitempty"`
	Close        bool              `json:"close"`
	Explanations []ExplanationJSON `json:"explanations"`
}

// ExplanationJSON is one scored explanation.
type ExplanationJSON struct {
	Text   string  `json:"text"`
	Kind   string  `json:"kind"`
	Layer  int     `json:"layer"`
	Site   string  `json:"site"`
	Tensor string  `json:"tensor"`
	World  int     `json:"world_size,omitempty"`
	Rank   int     `json:"rank,omitempty"`
	Scale  float64 `json:"scale"`
	Const  string  `json:"scale_constant,omitempty"`
	Align  string  `json:"alignment,omitempty"`
	Shift  int     `json:"shift,omitempty"`
	Order  []int   `json:"order,omitempty"`
	Cos    float64 `json:"cos"`
	MaxAbs float64 `json:"max_abs_diff"`
	Close  bool    `json:"close"`
}

// DiagnosisJSON is one diagnosis.
type DiagnosisJSON struct {
	Sentence string `json:"sentence"`
	Cause    string `json:"cause,omitempty"`
}

// DepartureJSON is diff's first departure.
type DepartureJSON struct {
	Layer int     `json:"layer"`
	Key   string  `json:"key"`
	Token int     `json:"token"`
	Cos   float64 `json:"cos"`
}

// JSON returns the file's report for `--json` of check (diff false) or
// diff.
func (r *Report) JSON(diff bool) FileJSON {
	v := r.Verdict()
	j := FileJSON{Command: "check", Path: r.Path, Verdict: v.String(), Exit: int(v), Format: r.Format, Layout: r.Schema, SeqLens: r.SeqLens, Chunks: r.Chunks,
		Rules: []RuleJSON{}, Entries: []EntryJSON{}, Diagnoses: []DiagnosisJSON{}}
	if diff {
		j.Command = "diff"
		j.Lines, _ = r.DiffLines()
	} else {
		j.Lines = r.Lines()
	}
	if r.Err != nil {
		j.Error = r.Err.Error()
	}
	for _, x := range r.Rules {
		j.Rules = append(j.Rules, RuleJSON{Rule: x.Rule, Status: strings.ToLower(x.Status.String()), Detail: x.Detail})
	}
	for _, m := range r.Matches {
		e := EntryJSON{Key: m.Key, Layer: m.Label, Condition: m.Condition, Close: m.ok(), Explanations: []ExplanationJSON{}}
		if m.HasClaimed {
			c := m.ClaimedScore.Cos
			e.ClaimedCos = &c
		}
		xs := m.Explanations
		if len(xs) == 0 && m.Condition == "" {
			xs = []Explanation{m.best()}
		}
		for _, x := range xs {
			e.Explanations = append(e.Explanations, ExplanationJSON{Text: x.String(), Kind: x.Cand.Kind, Layer: x.Cand.Layer, Site: x.Cand.Site,
				Tensor: x.Cand.Tensor, World: x.Cand.World, Rank: x.Cand.Rank, Scale: x.Scale, Const: x.Const, Align: x.Align, Shift: x.Shift,
				Order: x.Order, Cos: x.Score.Cos, MaxAbs: x.Score.MaxAbs, Close: x.Close})
		}
		j.Entries = append(j.Entries, e)
	}
	for _, d := range r.Diagnoses {
		j.Diagnoses = append(j.Diagnoses, DiagnosisJSON{Sentence: d.Sentence, Cause: d.Cause})
	}
	if d, ok := Departure(r.Matches); ok {
		j.FirstDepart = &DepartureJSON{Layer: d.Label, Key: d.Key, Token: d.FirstBadRow, Cos: d.ClaimedScore.Cos}
	}
	return j
}

// JSONLines renders every file of a path as one JSON object per line, as
// check (diff false) or diff reports it; a dump directory's own rules
// follow as one more object.
func (p *PathReport) JSONLines(diff bool) []string {
	cmd := "check"
	if diff {
		cmd = "diff"
	}
	if p.Err != nil {
		b, _ := json.Marshal(FileJSON{Command: cmd, Path: p.Path, Verdict: VerdictUnreadable.String(), Exit: int(VerdictUnreadable), Error: p.Err.Error(),
			Lines: []string{}, Rules: []RuleJSON{}, Entries: []EntryJSON{}, Diagnoses: []DiagnosisJSON{}})
		return []string{string(b)}
	}
	var out []string
	for _, f := range p.Files {
		b, _ := json.Marshal(f.JSON(diff))
		out = append(out, string(b))
	}
	if len(p.Rules) > 0 {
		v := p.Verdict()
		d := FileJSON{Command: cmd, Path: p.Path, Verdict: v.String(), Exit: int(v), Format: "directory", Lines: []string{},
			Rules: []RuleJSON{}, Entries: []EntryJSON{}, Diagnoses: []DiagnosisJSON{}}
		if p.Manifest != nil {
			d.Format = "hsdb dump"
		}
		for _, x := range p.Rules {
			d.Rules = append(d.Rules, RuleJSON{Rule: x.Rule, Status: strings.ToLower(x.Status.String()), Detail: x.Detail})
		}
		b, _ := json.Marshal(d)
		out = append(out, string(b))
	}
	return out
}

// findingOf is the key a file is counted under in a summary: its first
// failing rule with the diagnosis's leading words, or "valid".
func findingOf(r *Report) string {
	switch r.Verdict() {
	case VerdictValid:
		return "valid"
	case VerdictUnreadable:
		if r.Err != nil {
			return "unreadable"
		}
		return "nothing comparable"
	}
	var rules []string
	for _, x := range r.Rules {
		if x.Status == capture.Fail {
			rules = append(rules, x.Rule)
		}
	}
	return "FAIL " + strings.Join(rules, ", ")
}

// firstFailed returns r's first failing rule.
func firstFailed(r *Report) (RuleResult, bool) {
	for _, x := range r.Rules {
		if x.Status == capture.Fail {
			return x, true
		}
	}
	return RuleResult{}, false
}

// SummaryLines summarizes a path of many files: per finding (the set of
// failing rules, "valid", "unreadable") the number of files and the first
// few of them (up to show), most frequent first, then the directory's own
// rules. Full detail is Lines.
func (p *PathReport) SummaryLines(show int) []string {
	if p.Err != nil {
		return []string{p.Path + ": cannot read: " + p.Err.Error()}
	}
	out := []string{fmt.Sprintf("%s: %d file%s, verdict: %s", p.Path, len(p.Files), plural(len(p.Files)), p.Verdict())}
	for _, g := range p.findings() {
		out = append(out, fmt.Sprintf("  %6d  %s", len(g.files), g.key))
		for i, f := range g.files {
			if i == show {
				out = append(out, fmt.Sprintf("          … and %d more", len(g.files)-show))
				break
			}
			line := "          " + f.Path
			if why := f.summaryWhy(); why != "" {
				line += ": " + why
			}
			out = append(out, line)
		}
	}
	for _, x := range p.Rules {
		out = append(out, strings.TrimRight(fmt.Sprintf("  %-4s  %-*s  %s", x.Status, capture.RuleWidth, x.Rule, x.Detail), " "))
	}
	return out
}
