package worker

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// Flags are the flags of a worker process, `hsdb worker` and
// hsdb-cuda-worker alike: the front's address, the session token (else
// $HSDB_WORKER_TOKEN), the slot asked for and how long to try to reach
// the front.
type Flags struct {
	connect, token string
	rank           int
	dial           time.Duration
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.connect, "connect", "", "the front's address HOST:PORT (its --listen, printed when it starts)")
	fs.StringVar(&f.token, "token", "", "the session token the front printed (default $"+TokenEnv+")")
	fs.IntVar(&f.rank, "rank", -1, "the slot to run: stage × --tp + rank (-1: the next free one)")
	fs.DurationVar(&f.dial, "dial-timeout", 30*time.Second, "how long to try to reach the front")
}

// ErrUsage is returned by Flags.Config for missing or bad flags (exit
// status 2).
var ErrUsage = errors.New("usage")

// Config checks the parsed flags (args are the arguments left after them:
// there must be none) and returns the worker's configuration, with log as
// its notes' writer unless a front started it (the front then speaks for
// it). No token (neither --token nor $HSDB_WORKER_TOKEN) is an error: a
// front always has one. Errors wrap ErrUsage.
func (f *Flags) Config(args []string, log io.Writer) (WorkerConfig, error) {
	if f.connect == "" || len(args) > 0 {
		return WorkerConfig{}, fmt.Errorf("%w: --connect HOST:PORT [--token T] [--rank R]", ErrUsage)
	}
	if f.dial <= 0 {
		return WorkerConfig{}, fmt.Errorf("%w: --dial-timeout %s: want a positive duration (e.g. 30s)", ErrUsage, f.dial)
	}
	if f.rank < -1 {
		return WorkerConfig{}, fmt.Errorf("%w: --rank %d: want a rank >= 0", ErrUsage, f.rank)
	}
	tok := f.token
	if tok == "" {
		tok = os.Getenv(TokenEnv)
	}
	if tok == "" { // every front has a token: an empty one is refused as "wrong token" after the dial
		return WorkerConfig{}, fmt.Errorf("%w: no session token: give --token T or $%s (the token the front printed with its --listen address)", ErrUsage, TokenEnv)
	}
	cfg := WorkerConfig{Connect: f.connect, Token: tok, Rank: f.rank, Dial: f.dial}
	if !Spawned() {
		cfg.Log = log
	}
	return cfg, nil
}
