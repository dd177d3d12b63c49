package repl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"hsdb/inspect/client"
)

// frameEnd refuses `up`/`down` (N levels, counted when the user typed N)
// from frame cur past the end of the call chain, as gdb does: at #0, the
// stopped site, "Bottom (innermost) frame selected; you cannot go down.";
// at the outermost frame with a site (the one below the root model object,
// which has none), "Initial frame selected; you cannot go up.". Said in
// hsdb's words naming the frame; a count that overshoots says how far the
// end is (gdb would stop at the end silently: a script's `up 3` should not
// look at another frame than it asked for). Nil when the move stays inside.
func frameEnd(t *Term, cmd string, counted bool, n, dir int, cur client.Frame) error {
	asked := cmd
	if counted {
		asked = fmt.Sprintf("%s %d", cmd, n)
	}
	// n is compared with the distance to an end, never added to the level:
	// up 9223372036854775807 from #1 wrapped to frame -9223372036854775808.
	if dir < 0 {
		if n <= cur.Level {
			return nil
		}
		if cur.Level == 0 {
			return fmt.Errorf("%s: bottom (innermost) frame #0 selected (%s, %s, the site the pass stopped at): you cannot go down", asked, cur.Site, cur.Class)
		}
		return fmt.Errorf("%s: frame #%d (%s) is %d above the innermost frame #0: you can go down at most %d (frame 0 goes there)", asked, cur.Level, cur.Site, cur.Level, cur.Level)
	}
	bt, err := t.c.Backtrace()
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	outer := client.Frame{Level: -1}
	for _, f := range bt {
		if f.Site != "" && f.Level > outer.Level {
			outer = f
		}
	}
	if outer.Level < 0 || n <= outer.Level-cur.Level {
		return nil // SelectFrame says what is wrong, if anything is
	}
	root := ""
	if r := bt[len(bt)-1]; r.Site == "" {
		root = fmt.Sprintf("; above it only the root %s, which has no site", r.Class)
	}
	if cur.Level == outer.Level {
		return fmt.Errorf("%s: outermost frame #%d selected (%s, %s%s): you cannot go up", asked, cur.Level, cur.Site, cur.Class, root)
	}
	return fmt.Errorf("%s: frame #%d (%s) is %d below the outermost frame #%d (%s): you can go up at most %d", asked, cur.Level, cur.Site, outer.Level-cur.Level, outer.Level, outer.Site, outer.Level-cur.Level)
}

// cmdFrame runs `frame [N]`, `up [N]` (dir +1: outward, to a higher
// gdb frame number) and `down [N]` (dir -1: towards the stopped site #0).
func cmdFrame(t *Term, args string, dir int) error {
	cmd := map[int]string{0: "frame", 1: "up", -1: "down"}[dir]
	f := strings.Fields(args)
	if len(f) > 1 {
		return unexpectedArgs(cmd, f[1:])
	}
	var fr client.Frame
	var err error
	switch {
	case dir == 0 && len(f) == 0:
		fr, err = t.c.CurrentFrame()
	case dir == 0:
		n, aerr := strconv.Atoi(f[0])
		if aerr != nil {
			return fmt.Errorf("frame %q: want a level of `bt`", f[0])
		}
		if fr, err = t.c.SelectFrame(n); err != nil {
			if errors.Is(err, client.ErrNotStopped) {
				return fmt.Errorf("frame %d: %w", n, err)
			}
			return err // it says "frame N: ..." itself
		}
	default:
		n := 1
		if len(f) == 1 {
			if n, err = strconv.Atoi(f[0]); err != nil || n < 1 {
				return fmt.Errorf("%s %q: want a positive count", cmd, f[0])
			}
		}
		cur, cerr := t.c.CurrentFrame()
		if cerr != nil {
			return fmt.Errorf("%s: %w", cmd, cerr)
		}
		if err := frameEnd(t, cmd, len(f) == 1, n, dir, cur); err != nil {
			return err
		}
		if fr, err = t.c.SelectFrame(cur.Level + dir*n); err != nil {
			// The level asked for is computed: say from where.
			err = fmt.Errorf("%d from frame #%d (%s): %w", n, cur.Level, cur.Site, err)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	t.emit("frame", fr, func() string {
		var ts []string
		if len(fr.Outputs) > 0 {
			for _, x := range fr.Outputs[0] {
				ts = append(ts, x.Name+" "+shapeText(x.Shape))
			}
		}
		shown := "(none: this module has no inputs)"
		if len(ts) > 0 {
			shown = strings.Join(ts, ", ")
		}
		return fmt.Sprintf("#%d  %s  %s\n  %s", fr.Level, t.st.Site.Render(fr.Site), fr.Class, t.st.Dim.Render("tensors: "+shown))
	})
	return nil
}
