package capture

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// What a layer capture records at a decoder layer's output site
// (model.layers.{i}), in vLLM's terms.
const (
	// WhatStream is hidden_states + residual: the decoder layer's output as
	// HF returns it, = HF output_hidden_states[i+1] (the default; EAGLE-3
	// draft training reads these).
	WhatStream = "stream"
	// WhatHidden is vLLM's un-summed hidden_states half (the MLP output).
	WhatHidden = "hidden_states"
	// WhatResidual is vLLM's residual half.
	WhatResidual = "residual"
)

// ParseWhat checks a --what value: stream, hidden_states or residual ("" is
// stream). Error: any other value, named with the three it takes.
func ParseWhat(s string) (string, error) {
	switch s {
	case "", WhatStream:
		return WhatStream, nil
	case WhatHidden, WhatResidual:
		return s, nil
	}
	return "", fmt.Errorf("--what %q: want stream (hidden_states + residual), hidden_states or residual", s)
}

// ErrCapture marks a capture request hsdb cannot honour: a layer outside
// the model, a site or tensor the model does not have, a layer already
// captured as another kind.
var ErrCapture = errors.New("invalid capture")

// CaptureSpec is one captured (site, tensor) pair and the key it is
// stored under: "hidden_states.{layer}" for a layer capture (design.md's
// dump layout), "SITE:TENSOR" for a site capture.
type CaptureSpec struct {
	Site   string `json:"site"`
	Tensor string `json:"tensor"`
	Layer  int    `json:"layer"` // decoder layer of a layer capture; -1 for a site capture
	Key    string `json:"key"`
}

// SeqCapture is what was captured for one sequence: its token ids and, per
// key, a [len, width] tensor (float32, or a site's host dtype), rows in
// token order. Decode steps append rows; a new prefill of the sequence
// number starts it over.
type SeqCapture struct {
	Seq     int // the sequence's number in its batch (model.Batch.Seqs)
	IDs     []int32
	Tensors map[string]*tensor.Tensor
	// LossMask is the input's loss mask [len] (0/1), or nil; set by the
	// caller (the batch job) since a forward pass has none.
	LossMask []int64
	// ID names the sequence in a dump's manifest (the input's id, or its
	// index); set by the caller, "" means Seq.
	ID string
	// before is what was recorded before the last decode step began: a
	// step the debugger aborted (kill at a stop in it, an edit that no
	// longer applied) and `gen` ran again at the same position is rolled
	// back to it, not appended twice (recordIDs).
	before *stepMark
}

// Len returns the sequence's token count.
func (s *SeqCapture) Len() int { return len(s.IDs) }

// Capturer records chosen tensors during forward passes: a model.Hook to
// compose with the debugger's breakpoints through model.MultiHook. Per-token
// tensors are split per sequence of the flattened batch, gathered across
// ranks when sharded (all-gather along columns) or summed when partial,
// and, when replicated, checked across ranks (Gathered.MaxRankDiff, kept
// per key in Replicas). The REPL's `capture layers`, `capture site`,
// `capture list` and `capture clear` map onto AddLayers, AddSite, List and
// Clear; Result and Take hand the captures to Dump. Methods are safe to
// call between forward passes; Want and Visit are the hook's.
type Capturer struct {
	tree   *model.Tree
	layers int
	mu     sync.Mutex
	specs  []CaptureSpec
	bySite map[string][]int // site path -> spec indices
	what   string           // the kind of the layer captures ("" until the first)
	seqs   map[int]*SeqCapture
	batch  *model.Batch // the batch whose ids were recorded last
	reps   map[string]ReplicaRecord
	err    error        // first Visit error, returned by Result
	faults model.Faults // recording faults of the current step (SetFaults)
	active []string     // every injected fault of the current step, as text (SetFaults)
	// next holds the faults SetFaults gave, until the next step takes them.
	next  *stepFaults
	under map[string]bool // faults active while the held data was recorded
	pin   *pinState       // asynchronous copies into pinned memory (UsePinned), or nil
	// repsBefore are the replica records before the last decode step began,
	// restored with the sequences' rows when that step runs again
	// (recordIDs): an aborted attempt's cross-rank differences (a `set var
	// --rank` at the killed stop) are not the data's.
	repsBefore map[string]ReplicaRecord
	// underBefore is under before the last decode step began, restored
	// with the rows likewise: a fault active only in the aborted attempt
	// (`inject clear` at the killed stop) did not make the data a dump
	// then holds, and its manifest must not say it did (check fails a
	// dump written under injected faults).
	underBefore map[string]bool
}

// NewCapturer returns an empty capturer for a model with this tree and
// number of decoder layers.
func NewCapturer(tree *model.Tree, layers int) *Capturer {
	return &Capturer{tree: tree, layers: layers, bySite: map[string][]int{}, seqs: map[int]*SeqCapture{}, reps: map[string]ReplicaRecord{}}
}

// AddLayers captures `what` (WhatStream, WhatHidden, WhatResidual) at the
// output site of each decoder layer, stored as hidden_states.{layer}.
// Errors (ErrCapture): a layer outside [0, num_hidden_layers), a what other
// than the three, a layer already captured, or a what other than the one
// earlier layers were captured as (a dump holds one kind per layer key;
// use AddSite for a second).
func (c *Capturer) AddLayers(layers []int, what string) error {
	what, err := ParseWhat(what)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCapture, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.what != "" && c.what != what && c.hasLayerSpecs() {
		return fmt.Errorf("%w: layers are already captured as %s; `capture clear` first, or `capture site model.layers.N %s`", ErrCapture, c.what, what)
	}
	for _, l := range layers {
		if l < 0 || l >= c.layers {
			return fmt.Errorf("%w: layer %d: the model has layers 0..%d", ErrCapture, l, c.layers-1)
		}
		key := fmt.Sprintf("hidden_states.%d", l)
		for _, s := range c.specs {
			if s.Key == key {
				return fmt.Errorf("%w: layer %d is already captured", ErrCapture, l)
			}
		}
	}
	if err := c.partialLoad(); err != nil {
		return err
	}
	for _, l := range layers {
		site := fmt.Sprintf("model.layers.%d", l)
		if c.tree != nil && c.tree.Site(site) == nil {
			return fmt.Errorf("%w: the model has no site %s", ErrCapture, site)
		}
		c.add(CaptureSpec{Site: site, Tensor: what, Layer: l, Key: fmt.Sprintf("hidden_states.%d", l)})
	}
	c.what = what
	return nil
}

func (c *Capturer) hasLayerSpecs() bool {
	for _, s := range c.specs {
		if s.Layer >= 0 {
			return true
		}
	}
	return false
}

func (c *Capturer) add(s CaptureSpec) {
	c.bySite[s.Site] = append(c.bySite[s.Site], len(c.specs))
	c.specs = append(c.specs, s)
}

// AddSite captures tensor name at site ("model." may be omitted), stored as
// "SITE:TENSOR". The tensor must be per-token ([tokens, ...]). Errors
// (ErrCapture): no such site, a tensor the site does not show (the error
// lists what it shows), already captured.
func (c *Capturer) AddSite(site, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.tree.Site(site)
	if s == nil {
		return fmt.Errorf("%w: no site %q", ErrCapture, site)
	}
	if err := c.partialLoad(); err != nil {
		return err
	}
	if _, last := LoadedLayers(c.tree); last >= 0 && last < c.layers-1 && c.afterLayers(s.Path) {
		return TruncatedLoadErr(s.Path, last, c.layers)
	}
	found := false
	for _, t := range s.Tensors {
		found = found || t == name
	}
	if !found {
		return fmt.Errorf("%w: site %s shows %s, not %q", ErrCapture, s.Path, strings.Join(s.Tensors, ", "), name)
	}
	if why, ok := notPerToken[s.Class+"."+name]; ok {
		return fmt.Errorf("%w: %s %s is not one row per token (%s); a capture holds [tokens, width] rows of each sequence", ErrCapture, s.Path, name, why)
	}
	key := s.Path + ":" + name
	for _, x := range c.specs {
		if x.Key == key || (x.Site == s.Path && x.Tensor == name) {
			return fmt.Errorf("%w: %s %s is already captured (as %s)", ErrCapture, s.Path, name, x.Key)
		}
	}
	c.add(CaptureSpec{Site: s.Path, Tensor: name, Layer: -1, Key: key})
	return nil
}

// notPerToken names the site tensors (module class . tensor) whose rows
// are not the batch's tokens, so a capture of them could never be dumped:
// they are refused when the capture is asked for, not at dump. The LM
// head sees only the rows whose logits are computed — each sequence's last
// token in a prefill, as vLLM's LogitsProcessor gathers them before
// compute_logits; the MoE gate's load counts have one entry per expert
// (vLLM's FusedMoE expert load, expert_load_view).
var notPerToken = map[string]string{
	"ParallelLMHead.input":         "one row per sequence: the last token's, whose logits are computed",
	"ParallelLMHead.logits":        "one row per sequence: the last token's, whose logits are computed",
	"GateLinear.tokens_per_expert": "one count per routed expert",
	"GateLinear.local_load":        "one count per expert of the rank",
}

// List returns the capture specs in the order added.
func (c *Capturer) List() []CaptureSpec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]CaptureSpec(nil), c.specs...)
}

// What returns the kind the layer captures record ("" when none).
func (c *Capturer) What() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.what
}

// Layers returns the captured decoder layers in the order added.
func (c *Capturer) Layers() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, s := range c.specs {
		if s.Layer >= 0 {
			out = append(out, s.Layer)
		}
	}
	return out
}

// Clear forgets every spec and everything captured.
func (c *Capturer) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.specs, c.bySite, c.what = nil, map[string][]int{}, ""
	c.resetLocked()
}

// StartPass forgets what was recorded (the specs stay) when `run` starts a
// new pass, before it reaches any site: the recording of a pass starts
// over at its prefill, and the data of the pass before, whose edits the
// session no longer lists, is not this pass's. Visit started over at the
// prefill's first captured site only, so a `run` stopped or killed before
// that site left the last pass's rows, which `dump` wrote with a manifest
// that named none of their edits.
func (c *Capturer) StartPass() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked()
}

func (c *Capturer) resetLocked() {
	c.seqs, c.batch, c.err = map[int]*SeqCapture{}, nil, nil
	c.reps, c.under, c.repsBefore, c.underBefore = map[string]ReplicaRecord{}, nil, nil, nil
}

// Result returns the sequences captured so far, by sequence number, and
// the cross-rank checks per key, after waiting for the pass's asynchronous
// copies (UsePinned). The tensors are the capturer's own: do not modify
// them. Error: the first failure while capturing (a tensor that is not
// per-token, shards that do not cover the tensor, a failed copy).
func (c *Capturer) Result() ([]*SeqCapture, map[string]ReplicaRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.waitCopies(); err != nil {
		c.fail(err)
	}
	var out []*SeqCapture
	for _, s := range c.seqs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	reps := map[string]ReplicaRecord{}
	for k, v := range c.reps {
		reps[k] = v
	}
	return out, reps, c.err
}

// Take is Result followed by forgetting the captured data (the specs stay),
// for a batch job that dumps after every forward pass.
func (c *Capturer) Take() ([]*SeqCapture, map[string]ReplicaRecord, error) {
	seqs, reps, err := c.Result()
	c.mu.Lock()
	c.resetLocked()
	c.mu.Unlock()
	return seqs, reps, err
}

// Want reports whether ev's site has a capture. It reads only the spec
// table, which does not change during a pass.
func (c *Capturer) Want(ev *model.Event) bool {
	return len(c.bySite[ev.Site.Path]) > 0
}

// WantSites is the capturer's model.SiteFilter: the sites it has a
// capture at (the spec table does not change during a pass).
func (c *Capturer) WantSites(step int, sites []*model.Site) []bool {
	want := make([]bool, len(sites))
	for i, st := range sites {
		want[i] = len(c.bySite[st.Path]) > 0
	}
	return want
}

// Passed implements model.SiteFilter: the capturer keeps no position.
func (c *Capturer) Passed(*model.Event) {}

// Visit copies the wanted tensors of every rank to the host, assembles
// them (gatherSite) and appends each sequence's rows. It never stops the
// pass: a failure is kept and returned by Result.
func (c *Capturer) Visit(ev *model.Event, ranks []*model.RankView) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := ev.Batch
	c.takeFaults(b) // the faults set at a stop apply from the next step, as the engine's do
	if c.batch != b {
		if b.Step == 0 {
			// A new prefill (`run`) starts the recording over: what an
			// earlier pass recorded (sequences the new batch lacks, the
			// faults it ran under, its replica checks, its failure) is not
			// this pass's data, and a dump must not mix the two.
			c.resetLocked()
		}
		c.recordIDs(b)
	}
	c.noteFaults()
	for _, i := range c.bySite[ev.Site.Path] {
		spec := c.specs[i]
		g, async, err := c.visitPinned(ev, spec, ranks)
		if !async && err == nil {
			g, err = gatherSite(spec.Site, c.faultTensor(spec), ranks, true)
		}
		if err != nil {
			c.fail(err)
			continue
		}
		if g.T.Rows() != b.Tokens() || len(g.T.Shape) < 2 {
			c.fail(fmt.Errorf("%w: %s %s is %s, not per-token [%d, ...]: it cannot be split per sequence", ErrCapture, spec.Site, spec.Tensor, tensor.ShapeString(g.T.Shape), b.Tokens()))
			continue
		}
		c.recordReplicas(spec, g, len(ranks))
		for s, n := range b.SeqLens {
			sc := c.seqs[b.Seqs[s]]
			old := sc.Tensors[spec.Key]
			// The sequence position of this visit's first row: the tokens
			// recorded before this step (recordIDs appended this step's).
			rows := c.applyFaults(spec, g.T.SliceRows(b.SeqStart(s), b.SeqStart(s)+n), len(ranks), len(sc.IDs)-n)
			if old == nil && b.Step > 0 && len(sc.IDs) > n {
				// Armed while a pass was past this site: its earlier tokens
				// were never recorded here (other sites' rows were).
				c.fail(fmt.Errorf("%w: %s: sequence %d's first %d tokens were not recorded (the capture was armed after the pass had left %s); `run` again (then `gen`) to capture whole sequences",
					ErrCapture, spec.Key, b.Seqs[s], len(sc.IDs)-n, spec.Site))
			}
			if old != nil && b.Step > 0 {
				sc.Tensors[spec.Key] = appendRows(old, rows)
			} else {
				// g.T is this visit's own host copy (gatherSite allocates it),
				// so each sequence keeps its rows without a second copy on
				// the forward pass's path (applyFaults changes this copy).
				sc.Tensors[spec.Key] = rows
			}
		}
	}
	return nil
}

// Revisit records ev's site again after the debugger changed its tensors
// at a stop (`set var`, `patch`): the rows this step's Visit recorded for
// each capture of the site are replaced by the edited ones, so that a dump
// holds what the pass goes on with, as it does when a persistent edit is
// replayed (applied before the capture sees the site). Before, the file's
// hidden_states.L kept the value from before an edit at layer L while
// hidden_states.L+1 was computed from the edited one. The replica check
// merges the edited copies (an edit of one rank's copy makes them
// differ). A capture armed at the stop recorded nothing here and is left
// alone. Errors: none (a gather failure is kept, as Visit keeps it).
func (c *Capturer) Revisit(ev *model.Event, ranks []*model.RankView) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := ev.Batch
	if c.batch != b {
		return nil
	}
	for _, i := range c.bySite[ev.Site.Path] {
		spec := c.specs[i]
		g, err := gatherSite(spec.Site, c.faultTensor(spec), ranks, true)
		if err != nil {
			c.fail(err)
			continue
		}
		if g.T.Rows() != b.Tokens() || len(g.T.Shape) < 2 {
			continue // Visit refused it already
		}
		c.recordReplicas(spec, g, len(ranks))
		for s, n := range b.SeqLens {
			sc := c.seqs[b.Seqs[s]]
			old := sc.Tensors[spec.Key]
			if old == nil {
				continue
			}
			rows := c.applyFaults(spec, g.T.SliceRows(b.SeqStart(s), b.SeqStart(s)+n), len(ranks), len(sc.IDs)-n)
			// The rows of earlier steps: all but what this step recorded,
			// which is n rows, or world·n under gather-rows (taking n
			// grew a gather-rows capture by n rows at every edit).
			keep := old.Rows() - rows.Rows()
			if keep < 0 {
				continue
			}
			if keep > 0 {
				rows = appendRows(old.SliceRows(0, keep), rows)
			}
			sc.Tensors[spec.Key] = rows
		}
	}
	return nil
}

func (c *Capturer) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// appendRows returns a new tensor holding a's rows then b's.
func appendRows(a, b *tensor.Tensor) *tensor.Tensor {
	shape := append([]int{a.Rows() + b.Rows()}, a.Shape[1:]...)
	out := &tensor.Tensor{Shape: shape, DType: a.DType, Data: make([]byte, 0, len(a.Data)+len(b.Data))}
	out.Data = append(append(out.Data, a.Data...), b.Data...)
	return out
}

// recordReplicas merges a gathered site's cross-rank check into the replica
// record of spec's tensor (c.reps, what the manifest's replica_check
// reports), when more than one rank held a replicated or gathered copy.
// Called with c.mu held.
func (c *Capturer) recordReplicas(spec CaptureSpec, g *Gathered, ranks int) {
	if ranks > 1 && (strings.HasPrefix(g.How, "replicated") || strings.HasPrefix(g.How, "gathered")) {
		r := c.reps[spec.Key]
		r.merge(ReplicaRecord{Ranks: ranks, MaxRelDiff: g.MaxRankDiff, WorstRank: g.WorstRank, Differing: g.Differing, Alone: g.Alone})
		c.reps[spec.Key] = r
	}
}
