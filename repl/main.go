package repl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hsdb/inspect/client"
	"hsdb/inspect/plural"
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

// Run runs the debugger c and returns the exit status. With a script
// (or stdin not a terminal) it runs the commands and returns 1 when any
// command failed (a quit after the failure included; `set errors continue`
// only lets the script go on), 130 when Ctrl-C stopped the script (128 +
// SIGINT, as shells report it), else 0. Otherwise it starts the REPL,
// which returns 0 at quit or Ctrl-D.
func Run(dbg client.Client, c RunConfig) int {
	t := New(dbg, c.Out, Config{JSON: c.JSON, Terminal: c.Terminal})
	defer t.Close()
	var err error
	script := true
	notes := c.Out // what a Ctrl-C does; under --json stdout holds JSON objects alone
	if c.JSON && c.Err != nil {
		notes = c.Err
	}
	switch {
	case c.Script != "":
		stop := t.catchInterrupts(func() { os.Exit(130) }, true, notes)
		err = t.Source(c.Script)
		stop()
	case !c.Terminal:
		stop := t.catchInterrupts(func() { os.Exit(130) }, true, notes)
		err = t.RunScript(c.In, "stdin")
		stop()
	default:
		script = false
		hist := c.History
		if hist == "" {
			if home, herr := os.UserHomeDir(); herr == nil {
				hist = filepath.Join(home, ".hsdb_history")
			}
		}
		m, merr := dbg.Model()
		if merr != nil {
			fmt.Fprintln(c.Err, "hsdb:", merr)
			return 1
		}
		fmt.Fprintln(c.Out, bannerText(m))
		err = t.Interactive(hist)
	}
	code := t.exitStatus(err, script)
	if code != 0 && !errors.Is(err, ErrScript) && err != nil {
		if c.JSON && script {
			// as every failure under --json: one object on stdout
			cmd := "stdin" // the commands piped on stdin
			if c.Script != "" {
				cmd = "source " + c.Script
			}
			t.printErrorFor(cmd, err)
			return code
		}
		fmt.Fprintln(c.Err, "hsdb:", err)
	}
	return code
}

// exitStatus maps how a session ended to hsdb's exit status (see Run).
func (t *Term) exitStatus(err error, script bool) int {
	switch {
	case errors.Is(err, ErrInterrupted):
		return 130
	case script && (t.failed > 0 || errors.Is(err, ErrScript)):
		return 1
	case err == nil || errors.Is(err, ErrQuit):
		return 0
	}
	return 1
}

// bannerText is the line the interactive debugger starts with: the model,
// its layers, the ranks and the devices they run on ("cpu:0, cpu:1" at tp
// 2: every rank's device once, in rank order; the first and last of more
// than 4) and why that device.
func bannerText(m client.ModelInfo) string {
	layers := plural.N(m.Layers, "layer")
	if m.Loaded.Partial {
		layers = "decoder " + m.Loaded.String()
	}
	var devs []string
	for _, d := range m.Devices {
		if !slices.Contains(devs, d) {
			devs = append(devs, d)
		}
	}
	if len(devs) > 4 {
		devs = []string{devs[0], "…", devs[len(devs)-1]}
	}
	dev := strings.Join(devs, ", ")
	if m.DeviceWhy != "" {
		dev += " (" + m.DeviceWhy + ")"
	}
	return fmt.Sprintf("hsdb: %s (%s, %s) on %s, %s. `help` lists the commands.", m.Path, m.Arch, layers, plural.N(m.World, "rank"), dev)
}
