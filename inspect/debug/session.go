package debug

import (
	"fmt"
	"sync"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// Tokenizer is what a session needs of a model's tokenizer;
// engine/tokenizer.Tokenizer satisfies it.
type Tokenizer interface {
	// Encode returns the ids of text without BOS/EOS.
	Encode(text string) ([]int32, error)
	// Decode returns the text of ids.
	Decode(ids []int32) string
	// DecodePiece returns the text of id printed after prev (llama2.c
	// run.c's decode(prev, id)): its leading space dropped only after BOS.
	DecodePiece(prev, id int32) string
	// BOS is the beginning-of-sequence id, or -1.
	BOS() int32
}

// Session is one debugging session over a loaded engine. Its methods are
// called from one goroutine (the front end's); only Interrupt may be called
// from another (a signal handler).
type Session struct {
	E *engine.Engine
	// Tok encodes `input text`; nil means the model came without a
	// tokenizer (ErrNoTokenizer).
	Tok Tokenizer
	// TokErr says why Tok is nil (no tokenizer file was found), for the
	// message of `input text`.
	TokErr error
	// OnTrace, when set, receives a line for every site a pass visits while
	// tracing is on, on the goroutine that called Run, Continue, etc.
	OnTrace func(client.TraceLine)
	// Observers are hooks every pass runs alongside the debugger's own
	// (captures): each sees the sites it wants before the debugger may
	// stop there. Change them only between commands (no pass running; a
	// stopped pass sees the change from the next site on).
	Observers []model.Hook
	// Options are those E was opened with (the front end sets them; the
	// zero value means weights kept as stored). `info model` reads DType
	// to say what the weights were converted to.
	Options engine.Options

	faults model.Faults // injected (Inject), in the order given

	batch [][]int32
	job   *job
	// next is the greedy next token of each sequence after the last
	// completed step (what `gen` feeds), nil when there is none.
	next []int32
	// nextBorrowed says that next was dropped by Borrow: the forward
	// passes of `check` or `diff` replaced the engine's sequences after a
	// completed `run` (gen's error then says so, not "`run` first").
	nextBorrowed bool
	// ranBatch is the batch of the last prefill (`run`): the sequences
	// next continues. `gen` refuses when `input` has changed the batch
	// since (ranBatch differs from batch).
	ranBatch [][]int32
	// killedAt is where `kill` aborted the last pass ("SITE (step N)"),
	// "" once another pass starts: a dump refused for a site that pass
	// never reached says so. Used on the session's goroutine only.
	killedAt   string
	killedStep int

	// mu guards what the hook reads on the rank goroutines while a pass
	// runs, and the interrupt point that Interrupt sets from any goroutine.
	mu          sync.Mutex
	bps         []*Breakpoint
	atSite      map[string]*siteBreaks // break kind, by sitePatternKey; rebuilt when breakpoints go
	nextID      int
	trace       bool
	mode        resumeMode
	maxSeen     int64 // largest site key any rank has asked Want about
	interruptAt int64 // stop at the first site with key >= this; -1: none
	// intrPending counts interrupts whose interruptAt waits for the
	// workers' positions (Engine.Interrupt); runs numbers jobs, so that a
	// late answer does not reach the next one.
	intrPending int
	runs        int
	genLeft     int  // decode steps still to run in the current job
	running     bool // a pass is running (not stopped)
	watchStep   int  // the step the watches' previous values belong to
	// traceMuted: an interrupt came; trace lines are dropped until the pass
	// stops (sites queued or visited on the way to the stop are not shown).
	traceMuted bool
	// iv are the edits (`set var`, `patch`), guarded by mu.
	iv interventions
	// frame is the `bt` level the queries look at (`frame`, `up`, `down`),
	// 0 for the stopped site itself; reset at every stop. Used on the
	// session's goroutine only.
	frame int
}

// New returns a session over e with no batch and no breakpoints.
func New(e *engine.Engine) *Session {
	return &Session{E: e, interruptAt: -1, maxSeen: -1, nextID: 1}
}

// World returns the number of ranks.
func (s *Session) World() int { return s.E.World }

// Tree returns the model's module tree (for completion and checks).
func (s *Session) Tree() *model.Tree { return s.E.Tree }

// SetTrace turns tracing on or off: with it on every site visited is sent
// to OnTrace with its tensors' shapes.
func (s *Session) SetTrace(on bool) {
	s.mu.Lock()
	s.trace = on
	s.mu.Unlock()
}

// Tracing reports whether tracing is on.
func (s *Session) Tracing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trace
}

// checkRank returns an ErrRank error unless 0 <= r < world.
func (s *Session) checkRank(r int) error {
	if r < 0 || r >= s.E.World {
		if s.E.World == 1 {
			return fmt.Errorf("%w: rank %d: the world has 1 rank (tp 1): rank 0 only", client.ErrRank, r)
		}
		return fmt.Errorf("%w: rank %d: the world has %d ranks, 0-%d", client.ErrRank, r, s.E.World, s.E.World-1)
	}
	return nil
}

// key orders site visits across the steps of one job.
func (s *Session) key(ev *model.Event) int64 {
	return int64(ev.Step)*int64(len(s.E.Tree.Sites)+1) + int64(ev.Site.Index)
}
