package check

import "hsdb/inspect/client"

// Report renders p for a front end as `diff` (diff) or `check` prints it,
// in the output asked (client.CheckRequest.Output: "", "json", "summary",
// "json-summary", "full"); Failed and Exit are the shared verdict (Verdict).
func (p *PathReport) Report(diff bool, output string) (client.CheckReport, error) {
	v := p.Verdict()
	r := client.CheckReport{Path: p.Path, Files: len(p.Files), Failed: v != VerdictValid, Exit: int(v)}
	for _, f := range p.Files {
		r.Comparable = r.Comparable || f.Comparable()
	}
	switch {
	case output == "json":
		r.Lines = p.JSONLines(diff)
	case output == "json-summary":
		r.Lines = []string{p.SummaryJSONLine(diff, 3)}
	case output == "summary" || output == "" && len(p.Files) > 20:
		r.Lines = p.SummaryLines(3)
	case diff:
		for _, f := range p.Files {
			lines, _ := f.DiffLines()
			r.Lines = append(r.Lines, lines...)
		}
		r.Lines = append(r.Lines, p.dirLines()...)
	default:
		r.Lines = p.Lines()
	}
	if output != "json" && output != "json-summary" { // JSON escapes them itself
		for i, l := range r.Lines {
			r.Lines[i] = client.PlainLine(l)
		}
	}
	return r, p.ReadError()
}

// ReadError returns why the path could not be read at all (the path
// itself, or every file it holds), or nil.
func (p *PathReport) ReadError() error {
	if p.Err != nil {
		return p.Err
	}
	if p.Unreadable() {
		return p.Files[0].Err
	}
	return nil
}
