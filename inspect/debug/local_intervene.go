package debug

import "hsdb/inspect/client"

// SetVar edits a tensor at the stop.
func (l *Local) SetVar(req client.EditRequest) (client.Edit, error) { return l.s.SetVar(req) }

// Patch replaces a tensor at the stop (or arms it) from a dump.
func (l *Local) Patch(req client.PatchRequest) (client.Edit, error) { return l.s.Patch(req) }

// Edits lists the edits.
func (l *Local) Edits() ([]client.Edit, error) { return l.s.Edits(), nil }

// DeleteEdits forgets edits.
func (l *Local) DeleteEdits(ids ...int) error { return l.s.DeleteEdits(ids...) }

// Lens is the logit lens at the stop.
func (l *Local) Lens(k int) (*client.LensReport, error) { return l.s.Lens(k) }

// AttnProbs recomputes one head's attention probabilities at the stop.
func (l *Local) AttnProbs(head, seq int) (*client.AttnReport, error) { return l.s.AttnProbs(head, seq) }

// Save writes a tensor at the stop to a file.
func (l *Local) Save(name, path string, sl client.Slice, force bool) (*client.SaveReport, error) {
	return l.s.Save(name, path, sl, force)
}

// Compare compares the stop's tensors with a dump's.
func (l *Local) Compare(dump string) (*client.CompareReport, error) { return l.s.Compare(dump) }

// SelectFrame selects the `bt` level the queries look at.
func (l *Local) SelectFrame(level int) (client.Frame, error) { return l.s.SelectFrame(level) }

// CurrentFrame returns the selected frame.
func (l *Local) CurrentFrame() (client.Frame, error) { return l.s.CurrentFrame() }
