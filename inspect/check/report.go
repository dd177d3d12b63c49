package check

import "hsdb/inspect/client"

// CheckReport is p as `check` reports it to a front end: its lines,
// whether it failed, how many files the path held; and the error when
// nothing could be read (ReadError).
func (p *PathReport) CheckReport() (client.CheckReport, error) {
	return client.CheckReport{Path: p.Path, Failed: p.Failed(), Lines: p.Lines(), Files: len(p.Files)}, p.ReadError()
}

// DiffReport is p as `diff` reports it: each file's DiffLines, Failed when
// an entry of a comparable file departs from the model, Comparable when
// any file had something to judge (Report.Comparable); and the error when
// nothing could be read (ReadError).
func (p *PathReport) DiffReport() (client.CheckReport, error) {
	v := client.CheckReport{Path: p.Path, Files: len(p.Files)}
	for _, f := range p.Files {
		lines, departs := f.DiffLines()
		v.Lines = append(v.Lines, lines...)
		if f.Comparable() {
			v.Comparable, v.Failed = true, v.Failed || departs
		}
	}
	if !v.Comparable && len(p.Files) > 0 {
		v.Lines = append(v.Lines, "nothing comparable: no verdict")
	}
	return v, p.ReadError()
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
