package capture

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"hsdb/engine/model"
	"hsdb/engine/tokenizer"
)

// Limits are what a model accepts of one input sequence, checked while a
// batch job's input is read (OpenJSONL, ParseIDsList) and again before
// its first forward pass (RunCaptureJob), so that a bad row is named
// before any work: at most MaxPositions tokens (max_position_embeddings,
// as the REPL's `input` enforces) and token ids below Vocab (vocab_size).
// A zero field is not checked.
type Limits struct {
	MaxPositions int
	Vocab        int
}

// LimitsOf returns a model's limits from its config dimensions.
func LimitsOf(d *model.Dims) Limits {
	if d == nil {
		return Limits{}
	}
	return Limits{MaxPositions: d.MaxPos, Vocab: d.Vocab}
}

// check says what is wrong with a sequence of ids ("" when nothing).
func (l Limits) check(ids []int32) string {
	if l.MaxPositions > 0 && len(ids) > l.MaxPositions {
		return fmt.Sprintf("%d tokens, more than max_position_embeddings %d", len(ids), l.MaxPositions)
	}
	if l.Vocab > 0 {
		for j, v := range ids {
			if int(v) >= l.Vocab || v < 0 {
				return fmt.Sprintf("input_ids[%d] = %d is not a token id of the model (vocab_size %d)", j, v, l.Vocab)
			}
		}
	}
	return ""
}

// MaxTextBytesPerToken bounds a --data text row before it is tokenized:
// at most max_position_embeddings × this many bytes. The longest token of
// Qwen3's, DeepSeek-V3's and cl100k_base's vocabularies is 128 bytes, so a
// longer text holds more tokens than the model takes, and is refused from
// its length instead of after tokenizing it (tokenizers take 55-90 bytes
// of memory per byte of text: a 1 GiB line, MaxLineBytes, would take tens
// of GB before the count refused it).
const MaxTextBytesPerToken = 1024

// CheckText says what is wrong with a text of n bytes to be tokenized into
// one sequence ("" when nothing): longer than MaxPositions ×
// MaxTextBytesPerToken bytes. `capture --data`, `input file` and
// `input text` refuse such a text before tokenizing it.
func (l Limits) CheckText(n int) string {
	if l.MaxPositions > 0 && n > l.MaxPositions*MaxTextBytesPerToken {
		return fmt.Sprintf("text of %d bytes, more than max_position_embeddings %d tokens hold (%d bytes at most: %d per token, 8 times the longest token of released vocabularies)", n, l.MaxPositions, l.MaxPositions*MaxTextBytesPerToken, MaxTextBytesPerToken)
	}
	return ""
}

// Check validates every sequence against l. An OpenJSONL file already
// validated against l is not read again; otherwise its rows are read in one
// pass (memory bounded by a row). Errors name the sequence (its index and
// id) and the limit, or the file's read error.
func (in *Inputs) Check(l Limits) error {
	if in.file != nil && in.file.lim == l {
		return nil
	}
	r, err := in.Rows()
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		i, s, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if why := l.check(s.IDs); why != "" {
			return fmt.Errorf("%s: sequence %d (id %q): %s", in.Job.Input, i, s.ID, why)
		}
	}
}

// stopHook wraps a job's capturer so that a cancelled context (Ctrl-C,
// SIGTERM) stops the forward pass at the next site, not at the end of a
// long row. Ranks must answer Want alike, so, as inspect/debug's
// Session.Interrupt does, the stop is placed after every site any rank has
// asked about; every rank then asks for that site and Visit returns
// ErrInterrupted, which ends the pass on all ranks.
type stopHook struct {
	inner   model.Hook
	sites   int64 // sites of the tree, for a key that orders steps and sites
	mu      sync.Mutex
	maxSeen int64
	stopAt  int64 // -1: none
	pending bool  // a stop waits for the workers' positions (Engine.Interrupt)
}

func newStopHook(inner model.Hook, sites int) *stopHook {
	return &stopHook{inner: inner, sites: int64(sites) + 1, maxSeen: -1, stopAt: -1}
}

func (h *stopHook) key(ev *model.Event) int64 { return int64(ev.Step)*h.sites + int64(ev.Site.Index) }

// Want implements model.Hook.
func (h *stopHook) Want(ev *model.Event) bool {
	k := h.key(ev)
	h.mu.Lock()
	if k > h.maxSeen {
		h.maxSeen = k
	}
	stop := h.stopAt >= 0 && k >= h.stopAt
	h.mu.Unlock()
	return stop || h.inner.Want(ev)
}

// Visit implements model.Hook.
func (h *stopHook) Visit(ev *model.Event, ranks []*model.RankView) error {
	h.mu.Lock()
	stop := h.stopAt >= 0 && h.key(ev) >= h.stopAt
	h.mu.Unlock()
	if stop {
		return ErrInterrupted
	}
	if h.inner.Want(ev) {
		return h.inner.Visit(ev, ranks)
	}
	return nil
}

// WantSites implements model.SiteFilter: the capturer's sites, every
// site once a stop is asked for.
func (h *stopHook) WantSites(step int, sites []*model.Site) []bool {
	h.mu.Lock()
	stopping := h.pending || h.stopAt >= 0
	h.mu.Unlock()
	if stopping {
		return nil
	}
	return model.WantSitesOf(h.inner, step, sites)
}

// Passed implements model.SiteFilter: it records how far the ranks got.
func (h *stopHook) Passed(ev *model.Event) {
	k := h.key(ev)
	h.mu.Lock()
	if k > h.maxSeen {
		h.maxSeen = k
	}
	h.mu.Unlock()
}

// stop asks the running pass of target e to end at the next site no rank has
// reached: ranks in worker processes first report where they are
// (Engine.Interrupt), as they ask only at the capturer's sites.
func (h *stopHook) stop(e *Target) {
	h.mu.Lock()
	h.pending = true
	h.mu.Unlock()
	done := func() {
		h.mu.Lock()
		h.stopAt, h.pending = h.maxSeen+1, false
		h.mu.Unlock()
	}
	if e.Interrupt == nil {
		done()
		return
	}
	e.Interrupt(done)
}

// TextEncoder is what EncodeText needs of a tokenizer: its ids of a text
// and its BOS (tokenizer.TextBOS decides whether a text gets it).
type TextEncoder interface {
	tokenizer.Encoder
	BOS() int32
}

// EncodeText returns the ids a text runs as (`input text`, capture's
// "text" rows): the BOS the tokenizer's reference puts before a text
// (tokenizer.TextBOS), when it has one, then tok's ids of text, then the
// EOS the reference puts after it (tokenizer.TextEOS: HF's add_eos_token,
// as the trainer's tokenizer(text) gives), when it has one. why says
// what is wrong when the text does not fit l ("" when it does): too many
// bytes (CheckText, before tokenizing it), or more ids than MaxPositions
// with the BOS ("more than max_position_embeddings 512 tokens with BOS
// (...)"; tokenizer.EncodeAtMost stops there where the tokenizer can, so a
// text far too long costs about MaxPositions tokens of work). err is the
// tokenizer's own error (invalid UTF-8). A tokenizer that cannot stop
// early (llama2.c, SentencePiece) returns all its ids: the caller checks
// their count (Limits.check, SetBatch).
func (l Limits) EncodeText(tok TextEncoder, text string) (ids []int32, why string, err error) {
	if why := l.CheckText(len(text)); why != "" {
		return nil, why, nil
	}
	bos, eos := tokenizer.TextBOS(tok), tokenizer.TextEOS(tok)
	max, withBOS := -1, ""
	if l.MaxPositions > 0 {
		max = l.MaxPositions
		if bos >= 0 {
			max, withBOS = max-1, " with BOS"
		}
		if eos >= 0 {
			max, withBOS = max-1, withBOS+map[bool]string{true: " and EOS", false: " with EOS"}[bos >= 0]
		}
	}
	ids, err = tokenizer.EncodeAtMost(tok, text, max)
	if errors.Is(err, tokenizer.ErrTooManyTokens) {
		return nil, fmt.Sprintf("more than max_position_embeddings %d tokens%s (%v)", l.MaxPositions, withBOS, err), nil
	}
	if err != nil {
		return nil, "", err
	}
	if bos >= 0 {
		ids = append([]int32{bos}, ids...)
	}
	if eos >= 0 {
		ids = append(ids, eos)
	}
	return ids, "", nil
}
