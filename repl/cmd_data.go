package repl

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hsdb/inspect/client"
)

// tensorArgs parses "TENSOR [extra...] [--rank R] [--seq S] [--tokens A:B]".
func tensorArgs(cmd, args string) (string, []string, client.Slice, error) {
	a, err := splitArgs(args)
	if err != nil {
		return "", nil, client.All, fmt.Errorf("%s: %w", cmd, err)
	}
	sl, rest, err := sliceFlags(a)
	if err != nil {
		return "", nil, sl, fmt.Errorf("%s: %w", cmd, err)
	}
	if len(rest) == 0 {
		return "", nil, sl, fmt.Errorf("%s: which tensor? (at a stop, `print` without a name lists them)", cmd)
	}
	return rest[0], rest[1:], sl, nil
}

func cmdPrint(t *Term, args string) error {
	if strings.TrimSpace(args) == "" {
		st, err := t.c.Stopped()
		if err != nil {
			return err
		}
		if st == nil {
			return fmt.Errorf("print: %w", client.ErrNotStopped)
		}
		// The queries look at the frame `frame`/`up`/`down` selected: list
		// its tensors, not the stopped site's.
		if fr, ferr := t.c.CurrentFrame(); ferr == nil && fr.Site != st.Site {
			var names []string
			if len(fr.Outputs) > 0 {
				for _, x := range fr.Outputs[0] {
					names = append(names, x.Name)
				}
			}
			if len(names) == 0 {
				return fmt.Errorf("print: frame #%d %s has no tensors (this module has no inputs); `down` goes back towards the stopped site %s", fr.Level, fr.Site, st.Site)
			}
			return fmt.Errorf("print: which tensor? frame #%d %s shows %s", fr.Level, fr.Site, strings.Join(names, ", "))
		}
		return fmt.Errorf("print: which tensor? %s shows %s", st.Site, strings.Join(st.Tensors, ", "))
	}
	return t.printExpr(args, "")
}

// printExpr runs print's arguments (also for displays); title prefixes
// the report's heading.
func (t *Term) printExpr(args, title string) error {
	name, index, hasIndex, rest, err := cutIndex(strings.TrimSpace(args))
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	if name == "attn_probs" && !hasIndex {
		return t.printAttn(rest)
	}
	_, extra, sl, err := tensorArgs("print", name+" "+rest)
	if err != nil {
		return err
	}
	if len(extra) > 0 && hasIndex && strings.HasPrefix(extra[0], "[") { // numpy's stream[0][1]
		return fmt.Errorf("print: unexpected %q: one index holds rows and columns, %s[%s, %s]", strings.Join(extra, " "), name, index, strings.Trim(extra[0], "[]"))
	}
	if len(extra) > 0 {
		return unexpectedArgs("print", extra)
	}
	if hasIndex {
		idx, err := client.ParseIndex(index)
		if err != nil {
			return fmt.Errorf("print: %w", err)
		}
		rep, err := t.c.Values(name, idx, sl)
		if err != nil {
			return err
		}
		t.emit("values", rep, func() string { return title + t.valuesText(rep) })
		return nil
	}
	rep, err := t.c.Print(name, sl)
	if err != nil {
		return err
	}
	t.emit("print", rep, func() string { return title + t.printText(rep) })
	return nil
}

func cmdHist(t *Term, args string) error {
	name, extra, sl, err := tensorArgs("hist", args)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return unexpectedArgs("hist", extra)
	}
	rep, err := t.c.Hist(name, t.opts.bins, sl)
	if err != nil {
		return err
	}
	var v any = rep
	if rep.IDs != nil {
		v = idHistJSON(rep)
	}
	t.emit("hist", v, func() string { return t.histText(rep) })
	return nil
}

func cmdTop(t *Term, args string) error {
	name, extra, sl, err := tensorArgs("top", args)
	if err != nil {
		return err
	}
	k := 10
	if len(extra) > 1 {
		return unexpectedArgs("top", extra[1:])
	}
	if len(extra) == 1 {
		if k, err = strconv.Atoi(extra[0]); err != nil || k < 1 {
			return fmt.Errorf("top: K %q: want a positive integer", extra[0])
		}
	}
	rep, err := t.c.Top(name, k, sl)
	if err != nil {
		return err
	}
	t.emit("top", rep, func() string { return t.topText(rep) })
	return nil
}

func cmdRanks(t *Term, args string) error {
	name, extra, sl, err := tensorArgs("ranks", args)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return unexpectedArgs("ranks", extra)
	}
	if sl.Rank >= 0 {
		return fmt.Errorf("ranks compares every rank: --rank does not apply")
	}
	rep, err := t.c.Ranks(name, sl)
	if err != nil {
		return err
	}
	t.emit("ranks", rep, func() string { return t.ranksText(rep) })
	return nil
}

func cmdDisplay(t *Term, args string) error {
	args = strings.TrimSpace(args)
	if args == "" {
		return showDisplaysList(t)
	}
	// Check the expression parses; it is evaluated at every stop.
	name, index, hasIndex, rest, err := cutIndex(args)
	if err != nil {
		return fmt.Errorf("display: %w", err)
	}
	tensor, extra, sl, err := tensorArgs("display", name+" "+rest)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return unexpectedArgs("display", extra)
	}
	if err := t.c.CheckTensor(tensor, sl); err != nil {
		return fmt.Errorf("display: %w", err)
	}
	if hasIndex {
		if _, err := client.ParseIndex(index); err != nil {
			return fmt.Errorf("display: %w", err)
		}
	}
	d := display{ID: t.nextDisp, Expr: args}
	t.nextDisp++
	t.displays = append(t.displays, d)
	t.emit("display", d, func() string { return fmt.Sprintf("display %d: print %s", d.ID, d.Expr) })
	if st, err := t.c.Stopped(); err != nil {
		return err
	} else if st != nil {
		// As at every later stop (showDisplays): a stop whose site does
		// not show the tensor skips the display, without an error.
		if err := t.printExpr(d.Expr, fmt.Sprintf("display %d: ", d.ID)); err != nil && !errors.Is(err, client.ErrNoTensor) {
			return err
		}
	}
	return nil
}

func showDisplaysList(t *Term) error {
	ds := append([]display{}, t.displays...)
	t.emit("displays", ds, func() string { return displaysText(t, ds) })
	return nil
}

func displaysText(t *Term, ds []display) string {
	if len(ds) == 0 {
		return "no displays"
	}
	tb := newTable("id", "expression")
	for _, d := range ds {
		tb.add(strconv.Itoa(d.ID), d.Expr)
	}
	return tb.render(t.st)
}

func cmdUndisplay(t *Term, args string) error {
	ids, err := parseIDs(args, "display")
	if err != nil {
		return fmt.Errorf("undisplay: %w", err)
	}
	if len(ids) == 0 {
		ids = make([]int, len(t.displays))
		for i, d := range t.displays {
			ids[i] = d.ID
		}
	}
	for _, id := range ids {
		found := false
		for _, d := range t.displays {
			found = found || d.ID == id
		}
		if !found {
			return fmt.Errorf("undisplay: no display number %d", id)
		}
	}
	var keep []display
	var gone []string
	for _, d := range t.displays {
		if slices.Contains(ids, d.ID) {
			gone = append(gone, fmt.Sprintf("display %d", d.ID))
		} else {
			keep = append(keep, d)
		}
	}
	t.displays = keep
	ds := append([]display{}, keep...)
	// as delete says it: what went, then what is left
	t.emit("displays", ds, func() string {
		return deletedText(gone, len(ds), "displays", func() string { return displaysText(t, ds) })
	})
	return nil
}

// cmdBacktrace runs `bt [N|-N] [full]`: as gdb, N the innermost N
// frames, -N the outermost N; full changes nothing (every frame shows
// its tensors' shapes already).
func cmdBacktrace(t *Term, args string) error {
	n := 0
	for _, a := range strings.Fields(args) {
		if a == "full" {
			continue
		}
		v, err := strconv.Atoi(a)
		if err != nil || v == 0 || n != 0 {
			return fmt.Errorf("bt: want N or -N (the innermost or outermost N frames) and/or full, not %q", args)
		}
		n = v
	}
	frames, err := t.c.Backtrace()
	if err != nil {
		return err
	}
	more := ""
	switch {
	case n > 0 && n < len(frames):
		frames, more = frames[:n], "(More stack frames follow...)\n"
	case n < 0 && n > -len(frames): // not -n < len: -n of the most negative int is itself
		frames = frames[len(frames)+n:]
	}
	t.emit("backtrace", frames, func() string { return t.backtraceText(frames) + more })
	return nil
}

func cmdTrace(t *Term, args string) error {
	switch strings.TrimSpace(args) {
	case "on":
		if err := t.c.SetTrace(true); err != nil {
			return err
		}
	case "off":
		if err := t.c.SetTrace(false); err != nil {
			return err
		}
	case "":
	default:
		return fmt.Errorf("trace: want on or off")
	}
	on, err := t.c.Tracing()
	if err != nil {
		return err
	}
	t.emit("trace", map[string]bool{"on": on}, func() string { return "trace " + showOnOff(on) })
	return nil
}
