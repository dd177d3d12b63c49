package debug

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// Breakpoint is a breakpoint (Kind "break": stop at the sites Pattern
// matches, when Cond holds) or a watch (Kind "watch": stop at the first site
// showing Tensor where Cond becomes true, i.e. holds on some rank where it
// did not hold at the previous site showing Tensor in the same step). They
// share one numbering, as gdb's. Its exported fields are the plain
// client.Breakpoint a front end gets; the parsed condition and the sites it
// stops at stay here.
type Breakpoint struct {
	client.Breakpoint

	cond *Cond
	at   []bool // by site Index
	prev bool   // watch: the condition's value at the previous site
}

// Break adds a breakpoint at pattern with an optional condition (""), one
// shot when temporary. Errors: a bad pattern, a pattern matching no site
// (ErrNoSite), a malformed condition (ErrCond), a condition reading a
// tensor none of the matched sites shows (ErrNoTensor), a condition that
// holds on no rank of the world (ErrRank, Cond.CheckRanks).
func (s *Session) Break(pattern, cond string, temporary bool) (*Breakpoint, error) {
	sites, err := s.matchSites(pattern)
	if err != nil {
		return nil, err
	}
	b := &Breakpoint{Breakpoint: client.Breakpoint{Kind: "break", Pattern: pattern, Enabled: true, Temporary: temporary, Sites: len(sites)}, at: make([]bool, len(s.E.Tree.Sites))}
	for _, st := range sites {
		b.at[st.Index] = true
	}
	if cond != "" {
		c, err := ParseCond(cond, "")
		if err != nil {
			return nil, err
		}
		if err := c.CheckRanks(s.E.World); err != nil {
			return nil, err
		}
		for _, name := range c.Tensors() {
			if !anyShows(sites, name) {
				return nil, fmt.Errorf("%w: condition reads %q, which %s does not show (%s)", client.ErrNoTensor, name, pattern, tensorHint(sites))
			}
		}
		b.cond, b.Cond = c, cond
	}
	return s.add(b), nil
}

// Condition replaces breakpoint or watch id's condition, as gdb's
// `condition N COND`; "" makes a breakpoint unconditional (a watch needs
// one). The condition is checked as Break and Watch check theirs, and a
// refused one leaves the old in place. Errors: an unknown id, ErrCond,
// ErrNoTensor, ErrRank.
func (s *Session) Condition(id int, cond string) error {
	s.mu.Lock()
	var b *Breakpoint
	for _, x := range s.bps {
		if x.ID == id {
			b = x
		}
	}
	s.mu.Unlock()
	if b == nil {
		return fmt.Errorf("no breakpoint number %d (`info break` lists them)", id)
	}
	if cond == "" && b.Kind == "watch" {
		return fmt.Errorf("watch %d needs a condition (delete %d removes the watch)", id, id)
	}
	var c *Cond
	if cond != "" {
		var err error
		if c, err = ParseCond(cond, b.Tensor); err != nil {
			return err
		}
		if err := c.CheckRanks(s.E.World); err != nil {
			return err
		}
		var sites []*model.Site
		for _, st := range s.E.Tree.Sites {
			if b.at[st.Index] {
				sites = append(sites, st)
			}
		}
		for _, name := range c.Tensors() {
			switch {
			case b.Kind == "watch" && name != b.Tensor:
				return fmt.Errorf("%w: a watch on %q reads only %q; %q is another tensor", client.ErrNoTensor, b.Tensor, b.Tensor, name)
			case b.Kind != "watch" && !anyShows(sites, name):
				return fmt.Errorf("%w: condition reads %q, which %s does not show (%s)", client.ErrNoTensor, name, b.Pattern, tensorHint(sites))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b.cond, b.Cond, b.prev = c, cond, false
	return nil
}

// Ignore makes breakpoint or watch id pass its next count crossings
// that would stop it, as gdb's `ignore N COUNT`: they still count as
// hits. Errors: an unknown id, a negative count.
func (s *Session) Ignore(id, count int) error {
	if count < 0 {
		return fmt.Errorf("COUNT %d: want 0 or more crossings", count) // the front end says ignore
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bps {
		if b.ID == id {
			b.Ignore = count
			return nil
		}
	}
	return fmt.Errorf("no breakpoint number %d (`info break` lists them)", id)
}

// Watch adds a watch on tensor with condition cond, whose bare statistics
// apply to tensor ("absmax > 500"). Errors: no site shows tensor
// (ErrNoTensor), a malformed condition (ErrCond), a condition that holds on
// no rank (ErrRank).
func (s *Session) Watch(tensor, cond string) (*Breakpoint, error) {
	b := &Breakpoint{Breakpoint: client.Breakpoint{Kind: "watch", Tensor: tensor, Enabled: true}, at: make([]bool, len(s.E.Tree.Sites))}
	var with []*model.Site
	for _, st := range s.E.Tree.Sites {
		if slices.Contains(st.Tensors, tensor) {
			b.at[st.Index] = true
			with = append(with, st)
		}
	}
	if len(with) == 0 {
		return nil, fmt.Errorf("%w: no site shows a tensor named %q (%s)", client.ErrNoTensor, tensor, tensorHint(s.E.Tree.Sites))
	}
	b.Sites = len(with)
	c, err := ParseCond(cond, tensor)
	if err != nil {
		return nil, err
	}
	if err := c.CheckRanks(s.E.World); err != nil {
		return nil, err
	}
	for _, name := range c.Tensors() {
		if name != tensor {
			return nil, fmt.Errorf("%w: a watch on %q reads only %q; %q is another tensor", client.ErrNoTensor, tensor, tensor, name)
		}
	}
	b.cond, b.Cond = c, cond
	return s.add(b), nil
}

// siteBreaks indexes the breakpoints (Kind "break") of one site pattern:
// the first ids (at most client.AlsoAtMax, ascending) and how many there
// are, so that adding one is O(1) however many there are (10,000
// breakpoints at five sites copied every breakpoint set before for each
// new one's note).
type siteBreaks struct {
	first []int
	n     int
}

// sitePatternKey is the pattern a breakpoint's site is known by:
// "model.layers.2" and "layers.2" are the same site.
func sitePatternKey(p string) string { return strings.TrimPrefix(p, "model.") }

// index records b in s.atSite. s.mu held.
func (s *Session) index(b *Breakpoint) {
	if b.Kind == "watch" {
		return
	}
	if s.atSite == nil {
		s.atSite = map[string]*siteBreaks{}
	}
	k := sitePatternKey(b.Pattern)
	sb := s.atSite[k]
	if sb == nil {
		sb = &siteBreaks{}
		s.atSite[k] = sb
	}
	if len(sb.first) < client.AlsoAtMax {
		sb.first = append(sb.first, b.ID)
	}
	sb.n++
}

// reindex rebuilds s.atSite from s.bps (ascending ids) after breakpoints
// went. s.mu held.
func (s *Session) reindex() {
	s.atSite = nil
	for _, b := range s.bps {
		s.index(b)
	}
}

func (s *Session) add(b *Breakpoint) *Breakpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	b.ID = s.nextID
	s.nextID++
	c := *b
	if sb := s.atSite[sitePatternKey(b.Pattern)]; sb != nil && b.Kind != "watch" {
		c.AlsoAt, c.AlsoCount = slices.Clone(sb.first), sb.n
	}
	s.bps = append(s.bps, b)
	s.index(b)
	return &c
}

// Breakpoints returns a copy of every breakpoint and watch, by id.
func (s *Session) Breakpoints() []Breakpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Breakpoint, len(s.bps))
	for i, b := range s.bps {
		out[i] = *b
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Delete removes breakpoints by id, or all of them when ids is empty; an
// unknown id is an error and deletes nothing.
func (s *Session) Delete(ids ...int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ids) == 0 {
		s.bps, s.atSite = nil, nil
		return nil
	}
	if err := s.known(ids); err != nil {
		return err
	}
	keep := s.bps[:0]
	for _, b := range s.bps {
		if !slices.Contains(ids, b.ID) {
			keep = append(keep, b)
		}
	}
	s.bps = keep
	s.reindex()
	return nil
}

// Enable enables or disables breakpoints by id (all when ids is empty).
func (s *Session) Enable(on bool, ids ...int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.known(ids); err != nil {
		return err
	}
	for _, b := range s.bps {
		if len(ids) == 0 || slices.Contains(ids, b.ID) {
			b.Enabled = on
		}
	}
	return nil
}

func (s *Session) known(ids []int) error {
	for _, id := range ids {
		found := false
		for _, b := range s.bps {
			found = found || b.ID == id
		}
		if !found {
			return fmt.Errorf("no breakpoint number %d (`info break` lists them)", id)
		}
	}
	return nil
}

func anyShows(sites []*model.Site, name string) bool {
	for _, s := range sites {
		if slices.Contains(s.Tensors, name) {
			return true
		}
	}
	return false
}

// tensorHint lists the tensor names the sites show, for messages.
func tensorHint(sites []*model.Site) string {
	var names []string
	for _, s := range sites {
		for _, n := range s.Tensors {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return "tensors there: " + strings.Join(names, ", ")
}
