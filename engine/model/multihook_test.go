package model

import (
	"errors"
	"testing"
)

type countHook struct {
	want   string
	visits int
	err    error
}

func (c *countHook) Want(ev *Event) bool { return ev.Site.Path == c.want }
func (c *countHook) Visit(ev *Event, ranks []*RankView) error {
	c.visits++
	return c.err
}

// TestMultiHook: only hooks that want a site see it; an error stops the
// fan-out at that hook.
func TestMultiHook(t *testing.T) {
	a, b := &countHook{want: "x"}, &countHook{want: "y"}
	m := MultiHook{a, nil, b}
	x, y, z := &Event{Site: &Site{Path: "x"}}, &Event{Site: &Site{Path: "y"}}, &Event{Site: &Site{Path: "z"}}
	if !m.Want(x) || !m.Want(y) || m.Want(z) {
		t.Fatal("Want")
	}
	m.Visit(x, nil)
	m.Visit(y, nil)
	if a.visits != 1 || b.visits != 1 {
		t.Fatalf("visits %d %d", a.visits, b.visits)
	}
	stop := errors.New("stop")
	a.err, a.want, b.want = stop, "y", "y"
	if err := m.Visit(y, nil); err != stop || b.visits != 1 {
		t.Fatalf("err %v, b visits %d", err, b.visits)
	}
}
