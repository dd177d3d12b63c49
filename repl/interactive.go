package repl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/chzyer/readline"
)

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

// catchInterrupts turns SIGINT into Session.Interrupt until stop is
// called; a second SIGINT within a second runs exit (which must end the
// process).
func (t *Term) catchInterrupts(exit func()) (stop func()) {
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
				if t.S.Interrupt() {
					fmt.Fprintln(t.Out, "^C: stopping at the next site (Ctrl-C again within a second quits)")
				} else {
					fmt.Fprintln(t.Out, "^C (Ctrl-C again within a second quits)")
				}
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

// Interactive runs the read-eval-print loop on a terminal: readline with
// history in historyFile ("" for none), tab completion, an empty line
// repeating the last command, Ctrl-C clearing the line (or, while a pass
// runs, stopping it at the next site; twice within a second quits), Ctrl-D
// quitting.
func (t *Term) Interactive(historyFile string) error {
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
	})
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
