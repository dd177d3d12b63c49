package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"hsdb/inspect/capture"
)

// exitNow ends the process (tests stand in another).
var exitNow = os.Exit

// quitWait is how long after the first Ctrl-C or SIGTERM `hsdb capture`
// waits for the job to stop before saying that a second signal quits.
var quitWait = 2 * time.Second

// interruptible returns the capture job's context: cancelled by the first
// SIGINT or SIGTERM, so the job stops at the forward pass's next site and
// keeps what it validated (RunCaptureJob). A job that cannot get there —
// a rank worker stopped (SIGSTOP) or wedged, waited on for
// --worker-timeout — would otherwise ignore every further signal; so when
// it has not ended quitWait after the first, hsdb says so, and a second
// signal ends the process at once with exit status 130 (OUT.partial keeps
// the journaled sequences; the kernel releases the dump's lock), as a
// second Ctrl-C quits the debugger. stop releases the signals.
func interruptible(w io.Writer, out string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-sigs:
		case <-done:
			return
		}
		cancel()
		select {
		case <-sigs:
			fmt.Fprintf(w, "\nhsdb capture: %v again: quitting now; %s%s keeps the sequences validated so far: the same command resumes from there\n", s, out, capture.PartialSuffix)
			exitNow(130)
			return
		case <-done:
			return
		case <-time.After(quitWait):
		}
		fmt.Fprintf(w, "\nhsdb capture: %v: the job has not stopped yet (a rank worker not answering waits for --worker-timeout); Ctrl-C or SIGTERM again quits now\n", s)
		select {
		case <-sigs:
			fmt.Fprintf(w, "hsdb capture: quitting now; %s%s keeps the sequences validated so far: the same command resumes from there\n", out, capture.PartialSuffix)
			exitNow(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
