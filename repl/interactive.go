package repl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"

	"hsdb/engine/regfile"
)

// historyPath returns the history file readline may open: path itself
// when it is a regular file or does not exist yet (readline creates it),
// "" (no history) for "" and os.DevNull, and an error naming path and what
// it is otherwise (regfile.Open, which does not block on a named pipe).
func historyPath(path string) (string, error) {
	if path == "" || path == os.DevNull {
		return "", nil
	}
	f, err := regfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, regfile.ErrDanglingLink) { // readline creates it (through the link)
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	f.Close()
	return path, nil
}

// interrupts decides what a Ctrl-C (SIGINT) does: stop the running forward
// pass at the next site, or, when a second one comes within a second of the
// first, quit.
type interrupts struct {
	mu   sync.Mutex
	last time.Time
}

// hit records a Ctrl-C at now and reports whether to quit.
func (i *interrupts) hit(now time.Time) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	quit := !i.last.IsZero() && now.Sub(i.last) < time.Second
	i.last = now
	return quit
}

// catchInterrupts turns SIGINT into Term.interrupt until stop is called;
// a second SIGINT within a second runs exit (which must end the process).
// script says whether a script (-x, stdin) is what runs; notes is where
// the line saying what the Ctrl-C does goes (stderr under --json, whose
// stdout holds JSON objects alone).
func (t *Term) catchInterrupts(exit func(), script bool, notes io.Writer) (stop func()) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	var in interrupts
	go func() {
		for {
			select {
			case <-sig:
				if in.hit(time.Now()) {
					exit()
					return
				}
				fmt.Fprintln(notes, t.interrupt(script))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}

// interrupt is what one Ctrl-C does; it may be called from any goroutine
// and returns the line to print. A running forward pass stops at the next
// site, and a running script (hsdb -x, commands on stdin, `source`) stops
// after the command under way: in a script run by hsdb -x or from stdin,
// hsdb then exits with status 130. In the interactive REPL the session
// stays, stopped at the site. At a stop, a command waiting on a rank
// worker that does not answer (stopped by SIGSTOP, wedged) is abandoned:
// the worker is ended as failed and the command fails with its report.
func (t *Term) interrupt(script bool) string {
	t.interrupted.Store(true)
	running := t.c.Interrupt()
	if !running {
		if late := t.c.Abandon(); len(late) > 0 {
			return "^C: " + strings.Join(late, "; ") + ": abandoning the request (a worker still silent in a second is ended; `run` starts a fresh one)"
		}
	}
	switch {
	case script:
		return "^C: stopping the script (exit status 130; Ctrl-C again within a second quits now)"
	case running:
		return "^C: stopping at the next site (Ctrl-C again within a second quits)"
	}
	return "^C (Ctrl-C again within a second quits)"
}

// Interactive runs the read-eval-print loop on a terminal: readline with
// history in historyFile ("" for none), tab completion, an empty line
// repeating the last command, Ctrl-C clearing the line (or, while a pass
// runs, stopping it at the next site; twice within a second quits), Ctrl-D
// quitting. A history file that exists and is not a regular file is
// refused before readline opens it (it reads a named pipe or /dev/zero
// without end), except /dev/null, which means no history.
func (t *Term) Interactive(historyFile string) error {
	historyFile, err := historyPath(historyFile)
	if err != nil {
		return err
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:            t.st.Prompt.Render("(hsdb)") + " ",
		HistoryFile:       historyFile,
		AutoComplete:      completer{t},
		InterruptPrompt:   "^C",
		EOFPrompt:         "quit",
		HistorySearchFold: true,
		Stdout:            t.Out,
	})
	if err != nil {
		return fmt.Errorf("readline: %w", err)
	}
	defer rl.Close()
	stop := t.catchInterrupts(func() {
		rl.Close()
		fmt.Fprintln(t.Out, "quit")
		os.Exit(130)
	}, false, t.Out)
	defer stop()
	for {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = t.Exec(line)
		if errors.Is(err, ErrQuit) {
			return nil
		}
		if err != nil {
			t.printErrorFor(line, err)
		}
	}
}
