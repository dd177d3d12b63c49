package repl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	hsdbg "hsdb/engine/debug"
)

// RunConfig is how `hsdb` runs the debugger: a script (-x), JSON output,
// the streams, and whether stdin and stdout are a terminal.
type RunConfig struct {
	Script   string
	JSON     bool
	In       io.Reader
	Out, Err io.Writer
	Terminal bool
	// History is the readline history file ("" for ~/.hsdb_history).
	History string
}

// Run runs the debugger over s and returns the exit status: with a script
// (or stdin not a terminal) it runs the commands and returns 1 when one
// failed; otherwise it starts the REPL.
func Run(s *hsdbg.Session, c RunConfig) int {
	t := New(s, c.Out, Config{JSON: c.JSON, Terminal: c.Terminal})
	defer t.Close()
	var err error
	switch {
	case c.Script != "":
		stop := t.catchInterrupts(func() { os.Exit(130) })
		err = t.Source(c.Script)
		stop()
	case !c.Terminal:
		stop := t.catchInterrupts(func() { os.Exit(130) })
		err = t.RunScript(c.In, "stdin")
		stop()
	default:
		hist := c.History
		if hist == "" {
			if home, herr := os.UserHomeDir(); herr == nil {
				hist = filepath.Join(home, ".hsdb_history")
			}
		}
		m := s.Model()
		fmt.Fprintf(c.Out, "hsdb: %s (%s, %d layers) on %d rank(s), %s. `help` lists the commands.\n", m.Path, m.Arch, m.Layers, m.World, m.Devices[0])
		err = t.Interactive(hist)
	}
	if err == nil || errors.Is(err, ErrQuit) {
		return 0
	}
	if !errors.Is(err, ErrScript) {
		fmt.Fprintln(c.Err, "hsdb:", err)
	}
	return 1
}
