package client

import (
	"errors"
)

// ErrCond is wrapped by every CondError (errors.Is(err, ErrCond)).
var ErrCond = errors.New("malformed condition")

// ErrBusy: the engine is in the middle of a pass the session stopped, so it
// cannot run another forward pass (Borrow).
var ErrBusy = errors.New("a forward pass is stopped")

// ErrNoSite is wrapped when a pattern or path names no site of the model.
var ErrNoSite = errors.New("no such site")

// Sentinel errors callers test with errors.Is.
var (
	// ErrNotStopped: the command needs a pass stopped at a site.
	ErrNotStopped = errors.New("the forward pass is not stopped at a site")
	// ErrNoInput: `run` without a token batch.
	ErrNoInput = errors.New("no input")
	// ErrNoTokenizer: `input text` on a model without a tokenizer, or with
	// one that does not fit it (more tokens than its vocab_size).
	ErrNoTokenizer = errors.New("this model has no usable tokenizer")
	// ErrRank: a rank outside [0, world).
	ErrRank = errors.New("rank out of range")
	// ErrNoTensor: the site shows no tensor of that name.
	ErrNoTensor = errors.New("no such tensor")
	// ErrConsumed: an edit of a tensor the pass read before the stop (a
	// module's input), which could change nothing downstream.
	ErrConsumed = errors.New("tensor already consumed by the pass")
	// ErrMismatch: a dump that does not fit the stop's batch, for patch or
	// compare (shape, sequence count, sequence length).
	ErrMismatch = errors.New("the dump does not fit the batch")
	// ErrHead: an attention head outside [0, heads).
	ErrHead = errors.New("head out of range")
	// ErrKilled is the error a pass is aborted with when the session
	// restarts or ends it while stopped.
	ErrKilled = errors.New("forward pass aborted by the debugger")
)
