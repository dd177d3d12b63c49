package repl

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"hsdb/inspect/client"
	"hsdb/inspect/stats"
)

func cmdBreak(t *Term, args string) error  { return breakAt(t, args, false) }
func cmdTbreak(t *Term, args string) error { return breakAt(t, args, true) }

func breakAt(t *Term, args string, temp bool) error {
	cmd := "break"
	if temp {
		cmd = "tbreak"
	}
	site, cond, _ := strings.Cut(args, " if ")
	site, cond = strings.TrimSpace(site), strings.TrimSpace(cond)
	if strings.HasSuffix(site, " if") || site == "if" {
		return fmt.Errorf("%s: `if` needs a condition: %s layers.3 if nan", cmd, cmd)
	}
	if site == "" || strings.ContainsAny(site, " \t") {
		return fmt.Errorf("%s: want SITE [if COND], e.g. %s layers.*.mlp if absmax(output) > 100", cmd, cmd)
	}
	b, err := t.c.Break(site, cond, temp)
	if err != nil {
		return err
	}
	t.emit("breakpoint", b, func() string { return t.bpCreatedText(b) + t.alsoSetText(b) })
	return nil
}

// alsoSetText is gdb's "Note: breakpoint 1 also set at …": the
// breakpoints that already stop at the same SITE (`model.` left out or
// not), each of which fires with the new one at every stop there. The
// session keeps them by site (Breakpoint.AlsoAt, AlsoCount), so the note
// costs nothing however many breakpoints there are.
func (t *Term) alsoSetText(b client.Breakpoint) string {
	if b.AlsoCount == 0 {
		return ""
	}
	same := make([]string, len(b.AlsoAt))
	for i, id := range b.AlsoAt {
		same[i] = strconv.Itoa(id)
	}
	what := "breakpoint " + same[0]
	if b.AlsoCount > 1 {
		what = "breakpoints " + strings.Join(same, ", ")
		if rest := b.AlsoCount - len(same); rest > 0 {
			what += fmt.Sprintf(", and %d more (`info break` lists them)", rest)
		}
	}
	return "\n" + t.st.Dim.Render(fmt.Sprintf("Note: %s also set at %s.", what, b.Pattern))
}

func cmdWatch(t *Term, args string) error {
	// The tensor name ends at a space or a tab, as print's and set var's
	// do (cutIndex): cut at spaces alone, `watch stream<TAB>absmax > 5`
	// watched a tensor "stream\tabsmax".
	tensor, cond := strings.TrimSpace(args), ""
	if j := strings.IndexAny(tensor, " \t"); j >= 0 {
		tensor, cond = tensor[:j], tensor[j+1:]
	}
	if tensor == "" || strings.TrimSpace(cond) == "" {
		return fmt.Errorf("watch: want TENSOR COND, e.g. watch stream absmax > 500")
	}
	cond = strings.TrimSpace(cond)
	if strings.IndexAny(cond[:1], "<>=!") == 0 { // `watch stream > 3`: a tensor has no one value to compare
		return fmt.Errorf("watch %s %s: a condition compares a statistic of the tensor: watch %s absmax %s (statistics: %s)", tensor, cond, tensor, cond, strings.Join(stats.StatNames, " "))
	}
	b, err := t.c.Watch(tensor, cond)
	if err != nil {
		return err
	}
	t.emit("breakpoint", b, func() string { return t.bpCreatedText(b) })
	return nil
}

// parseIDs parses the numbers of breakpoints, displays or edits (what
// names them in the error: "breakpoint", "display", "edit", with the
// `info` subcommand that lists them).
func parseIDs(args, what string) ([]int, error) {
	var ids []int
	for _, f := range strings.Fields(args) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			article := "a"
			if strings.ContainsRune("aeiou", rune(what[0])) {
				article = "an"
			}
			return nil, fmt.Errorf("%q is not %s %s number (`info %s` lists them)", f, article, what, map[string]string{"breakpoint": "break", "display": "display", "edit": "edits"}[what])
		}
		ids = append(ids, n)
	}
	return ids, nil
}

func cmdDelete(t *Term, args string) error {
	if w, rest, _ := strings.Cut(strings.TrimSpace(args), " "); w == "edits" {
		return cmdDeleteEdits(t, rest)
	}
	ids, err := parseIDs(args, "breakpoint")
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	before, err := t.c.Breakpoints()
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := t.c.Delete(ids...); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	bps, err := t.c.Breakpoints()
	if err != nil {
		return err
	}
	if bps == nil {
		bps = []client.Breakpoint{}
	}
	var gone []string // what Delete removed: listed before, not after
	for _, b := range before {
		if !slices.ContainsFunc(bps, func(a client.Breakpoint) bool { return a.ID == b.ID }) {
			kind := "breakpoint"
			if b.Kind == "watch" {
				kind = "watch"
			}
			gone = append(gone, fmt.Sprintf("%s %d", kind, b.ID))
		}
	}
	t.emit("breakpoints", bps, func() string {
		return deletedText(gone, len(bps), "breakpoints or watches", func() string { return t.breakpointsText(bps) })
	})
	return nil
}

// deletedText is what `delete` and `delete edits` print: "deleted X, Y"
// (or "deleted nothing"), then "no WHAT left" or "left:" and the table of
// the left entries (left of them).
func deletedText(gone []string, left int, what string, table func() string) string {
	head := "deleted nothing"
	if len(gone) > 0 {
		head = "deleted " + strings.Join(gone, ", ")
	}
	if left == 0 {
		return head + "; no " + what + " left"
	}
	return head + "; left:\n" + table()
}

func cmdEnable(t *Term, args string, on bool) error {
	ids, err := parseIDs(args, "breakpoint")
	if err == nil {
		err = t.c.Enable(on, ids...)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", map[bool]string{true: "enable", false: "disable"}[on], err)
	}
	return showBreakpoints(t)
}

// cmdKill runs `kill`: abort the stopped pass. Its usage is its bare name,
// so Exec has refused any arguments.
func cmdKill(t *Term, _ string) error {
	st, err := t.c.Stopped()
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("kill: no forward pass is stopped")
	}
	if err := t.c.Kill(); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	t.emit("kill", map[string]any{"site": st.Site, "step": st.Step}, func() string {
		return fmt.Sprintf("the pass at %s (step %d) was aborted", st.Site, st.Step)
	})
	return nil
}

// cmdIgnore runs `ignore N COUNT`, answering as gdb does.
func cmdIgnore(t *Term, args string) error {
	f := strings.Fields(args)
	if len(f) != 2 {
		return fmt.Errorf("ignore: want N COUNT, e.g. ignore 1 2 (pass breakpoint 1 twice)")
	}
	ids, err := parseIDs(f[0], "breakpoint")
	if err != nil {
		return fmt.Errorf("ignore: %w", err)
	}
	n, err := strconv.Atoi(f[1])
	if errors.Is(err, strconv.ErrRange) { // a whole number past int: gdb's "Numeric constant too large."
		if strings.HasPrefix(f[1], "-") {
			return fmt.Errorf("ignore: COUNT %s: want 0 or more crossings", f[1])
		}
		return fmt.Errorf("ignore: COUNT %s is too large (at most %d)", f[1], math.MaxInt)
	}
	if err != nil {
		return fmt.Errorf("ignore: COUNT %q is not a number", f[1])
	}
	if err := t.c.Ignore(ids[0], n); err != nil {
		return fmt.Errorf("ignore: %w", err)
	}
	msg := fmt.Sprintf("Will ignore next %d crossings of breakpoint %d.", n, ids[0])
	switch n {
	case 0:
		msg = fmt.Sprintf("Will stop next time breakpoint %d is reached.", ids[0])
	case 1:
		msg = fmt.Sprintf("Will ignore next crossing of breakpoint %d.", ids[0])
	}
	t.emit("ignore", map[string]int{"id": ids[0], "ignore": n}, func() string { return msg })
	return nil
}

// cmdCondition runs `condition N [COND]`.
func cmdCondition(t *Term, args string) error {
	n, cond, _ := strings.Cut(strings.TrimSpace(args), " ")
	if n == "" {
		return fmt.Errorf("condition: want N [COND], e.g. condition 1 absmax(stream) > 1e4 (condition 1 alone: no condition)")
	}
	ids, err := parseIDs(n, "breakpoint")
	if err == nil {
		err = t.c.Condition(ids[0], strings.TrimSpace(cond))
	}
	if err != nil {
		return fmt.Errorf("condition: %w", err)
	}
	return showBreakpoints(t)
}

func showBreakpoints(t *Term) error {
	bps, err := t.c.Breakpoints()
	if err != nil {
		return err
	}
	if bps == nil {
		bps = []client.Breakpoint{}
	}
	t.emit("breakpoints", bps, func() string { return t.breakpointsText(bps) })
	return nil
}

// showWatchpoints is `info watchpoints`: the watches alone, as gdb lists
// them (`info break` lists breakpoints and watches together).
func showWatchpoints(t *Term) error {
	bps, err := t.c.Breakpoints()
	if err != nil {
		return err
	}
	ws := []client.Breakpoint{}
	for _, b := range bps {
		if b.Kind == "watch" {
			ws = append(ws, b)
		}
	}
	t.emit("breakpoints", ws, func() string {
		if len(ws) == 0 {
			return "no watches (`info break` lists the breakpoints)"
		}
		return t.breakpointsText(ws)
	})
	return nil
}
