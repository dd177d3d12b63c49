package repl

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestScriptInterruptWhileWaitingForLine: Ctrl-C while a script waits for
// its next line (commands piped on stdin by a program that sent no more,
// `cat | hsdb`) stops the script with ErrInterrupted (exit status 130).
// The script read its lines on the loop's goroutine, so it stayed in the
// pipe's read: "^C: stopping the script" was printed and hsdb went on
// waiting, for good if no line came.
func TestScriptInterruptWhileWaitingForLine(t *testing.T) {
	f := newFake(t, 1)
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { pw.Write([]byte("echo first\n")) }() // then nothing more: the pipe stays open
	res := make(chan error, 1)
	go func() { res <- f.RunScript(pr, "stdin") }()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // Ctrl-C, again until the script has seen one (RunScript clears the flag as it starts)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				f.Term.interrupt(true)
			}
		}
	}()
	select {
	case err := <-res:
		if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "stdin stopped before line") {
			t.Fatalf("Ctrl-C while the script waited for a line: %v, want ErrInterrupted naming the line", err)
		}
		if code := f.exitStatus(err, true); code != 130 {
			t.Fatalf("exit status %d, want 130", code)
		}
	case <-time.After(20 * time.Second):
		pw.CloseWithError(errors.New("test gave up")) // unblock the reader
		<-res
		t.Fatal("Ctrl-C while the script waited for its next line on an open pipe did not stop it")
	}
}
