package debug

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/inspect/capture"
	"hsdb/inspect/check"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// engineKinds and recordKinds are the kinds the engine's blocks and the
// capturer apply (client.FaultKinds documents them; a test checks both
// lists against it).
var engineKinds = []string{model.FaultSkipAllReduce, model.FaultVocabPadding, model.FaultRouterSoftmax, model.FaultRouterNoBias, model.FaultPerturbRank, model.FaultChunkNoContext}

// faultKind returns the table entry of kind.
func faultKind(kind string) (client.FaultKind, bool) {
	for _, k := range client.FaultKinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return client.FaultKind{}, false
}

// Inject adds fault f to every following pass: a computation fault to the
// engine (its blocks consult it), a recording fault to the captures.
// Errors: an unknown kind, an argument the kind does not read or a VALUE
// it cannot use (checkFaultArgs), a rank outside the world, a site that
// names no site of the model or none the kind acts on (a router fault on
// a dense model), a nan-at --channel past hidden_size, a row past a
// sequence of the batch given so far (faultRowsFit; Run checks the batch
// it prefills).
func (s *Session) Inject(cf client.Fault) error {
	f := model.Fault(cf)
	k, ok := faultKind(f.Kind)
	if !ok {
		var names []string
		for _, k := range client.FaultKinds {
			names = append(names, k.Kind)
		}
		return fmt.Errorf("inject: unknown fault %q (want one of %s)", f.Kind, strings.Join(names, ", "))
	}
	if err := checkFaultArgs(f); err != nil {
		return err
	}
	w := s.E.World
	if f.Kind == model.FaultPerturbRank {
		if w == 1 {
			return fmt.Errorf("inject %s: one rank holds the only copy: the fault needs tp > 1", f.Kind)
		}
		if f.Rank < 0 {
			f.Rank = w - 1
		}
	}
	// At one rank these change nothing (no all-reduce to skip, the
	// vocabulary unsplit): they were accepted and listed at every run and
	// in the dump's manifest while the run was the model's own.
	if f.Kind == model.FaultSkipAllReduce && w == 1 {
		return fmt.Errorf("inject %s: one rank has no all-reduce to skip: the fault needs tp > 1", f.Kind)
	}
	if f.Kind == model.FaultVocabPadding && w == 1 {
		return fmt.Errorf("inject %s: one rank holds the whole vocabulary, unsplit: the fault needs tp > 1", f.Kind)
	}
	if (f.Kind == capture.FaultKeepShard || f.Kind == capture.FaultGatherRows) && w == 1 {
		return fmt.Errorf("inject %s: one rank holds the whole tensor: the fault needs tp > 1", f.Kind)
	}
	if f.Rank >= w {
		return fmt.Errorf("inject %s: --rank %d, the model runs on %s", f.Kind, f.Rank, plural.N(w, "rank"))
	}
	if f.Site != "" && !s.anySite(f.Site, nil) {
		return fmt.Errorf("inject %s: no site %s (info sites lists them)", f.Kind, f.Site)
	}
	if h := s.E.Dims.Hidden; f.Kind == capture.FaultNaNAt && h > 0 && f.Channel >= h {
		// applyFaults skipped a channel past the row: nothing was recorded
		return fmt.Errorf("inject %s: --channel %d: a layer's row has hidden_size %d channels (0..%d)", f.Kind, f.Channel, h, h-1)
	}
	if err := faultRowsFit(f, s.batch); err != nil {
		return fmt.Errorf("inject %w", err)
	}
	switch {
	case f.Kind == model.FaultChunkNoContext:
		if f.Token < 1 {
			return fmt.Errorf("inject %s: give --token K, the first token of the second chunk (K ≥ 1)", f.Kind)
		}
		if !s.anySite(f.Site, func(st *model.Site) bool { return strings.HasSuffix(st.Path, ".self_attn") }) {
			return fmt.Errorf("inject %s: no attention (self_attn) at %s", f.Kind, f.Site)
		}
	case k.Recorded || f.Kind == model.FaultPerturbRank:
		if f.Site != "" && !s.anySite(f.Site, func(st *model.Site) bool { return st.Layer >= 0 }) {
			return fmt.Errorf("inject %s: %s is not in a decoder layer", f.Kind, f.Site)
		}
	case !s.anySite(f.Site, func(st *model.Site) bool { return slices.Contains(k.Classes, st.Class) && actsOn(f.Kind, st) }):
		if at := s.reducedAbove(f); at != "" {
			return fmt.Errorf("inject %s: %s does not all-reduce (built with reduce_results=False: %s all-reduces its partial sum with the other experts'); inject at %s", f.Kind, f.Site, at, at)
		}
		return fmt.Errorf("inject %s: the model has no %s there to act on", f.Kind, strings.Join(k.Classes, " or "))
	}
	switch f.Kind {
	case capture.FaultScaleResidual:
		if f.Value == 0 {
			f.Value = 0.5
			if rsf := s.routedScaling(); rsf > 0 {
				f.Value = 1 / rsf
			}
		}
	case capture.FaultShiftRows:
		if f.Value == 0 {
			f.Value = 1
		}
	}
	s.faults = append(s.faults, f)
	s.applyFaults()
	return nil
}

// The arguments each kind reads (client.FaultKinds says what they mean):
// a VALUE (0 = the kind's default), --token, --channel, --rank. A
// recording fault changes the gathered tensor every rank shares, so only
// keep-shard (the rank whose shard is kept) reads --rank; computation
// faults read it as the one rank they act on.
var (
	valueKinds   = []string{model.FaultPerturbRank, capture.FaultScaleResidual, capture.FaultShiftRows}
	tokenKinds   = []string{capture.FaultNaNAt, model.FaultChunkNoContext}
	channelKinds = []string{capture.FaultNaNAt}
)

// maxShiftRows bounds shift-rows' VALUE: rows move by at most a sequence's
// length, and max_position_embeddings is far below it.
const maxShiftRows = 1 << 31

// minPerturb is the least |VALUE| of perturb-rank whose 1 + VALUE float32
// does not round to 1 (half float32's epsilon 2^-23, rounded up).
const minPerturb = 6e-8

// checkFaultArgs refuses an argument that kind f.Kind does not read (it
// was dropped silently, while the fault's listing and the dump's manifest
// showed it) and a VALUE the kind cannot use: not finite in float32 (the
// dtype tensors are scaled in), 0 in float32 (scale-residual 1e-46 zeroed
// the output while listed as 1e-46), for perturb-rank one whose 1 + VALUE
// float32 rounds to 1 (1e-10 changed nothing, and the replica check then
// found the ranks equal), or for shift-rows not a whole number of tokens
// (0.5 shifted by int(0.5) = 0, +Inf by an undefined conversion).
func checkFaultArgs(f model.Fault) error {
	switch {
	case f.Value != 0 && !slices.Contains(valueKinds, f.Kind):
		return fmt.Errorf("inject %s: takes no VALUE (got %g); %s take one", f.Kind, f.Value, strings.Join(valueKinds, ", "))
	case f.Token != 0 && !slices.Contains(tokenKinds, f.Kind):
		return fmt.Errorf("inject %s: takes no --token (got %d); %s take one", f.Kind, f.Token, strings.Join(tokenKinds, " and "))
	case f.Channel != 0 && !slices.Contains(channelKinds, f.Kind):
		return fmt.Errorf("inject %s: takes no --channel (got %d); %s takes one", f.Kind, f.Channel, strings.Join(channelKinds, ", "))
	case f.Rank >= 0 && capture.IsRecordFault(f.Kind) && f.Kind != capture.FaultKeepShard:
		return fmt.Errorf("inject %s: takes no --rank (got %d): it changes what is recorded, the gathered tensor every rank shares (keep-shard takes --rank: the rank whose shard is kept)", f.Kind, f.Rank)
	case math.IsNaN(f.Value) || math.IsInf(f.Value, 0):
		return fmt.Errorf("inject %s: VALUE %g: want a finite number", f.Kind, f.Value)
	case math.IsInf(float64(float32(f.Value)), 0):
		return fmt.Errorf("inject %s: VALUE %g: want a number float32 holds (at most %g): tensors are scaled in float32", f.Kind, f.Value, math.MaxFloat32)
	case f.Value != 0 && float32(f.Value) == 0:
		return fmt.Errorf("inject %s: VALUE %g: float32 holds it as 0 (the smallest it holds is %g): tensors are scaled in float32", f.Kind, f.Value, math.SmallestNonzeroFloat32)
	case f.Kind == model.FaultPerturbRank && f.Value != 0 && float32(1+f.Value) == 1:
		return fmt.Errorf("inject %s: VALUE %g: the rank's copy is scaled by 1 + VALUE, which float32 rounds to 1 (no change); want |VALUE| of at least %g", f.Kind, f.Value, minPerturb)
	case f.Kind == capture.FaultShiftRows && (f.Value != math.Trunc(f.Value) || math.Abs(f.Value) >= maxShiftRows):
		return fmt.Errorf("inject %s: VALUE %g: want a whole number of tokens between %d and %d", f.Kind, f.Value, -maxShiftRows+1, maxShiftRows-1)
	}
	return nil
}

// faultRowsFit refuses a recording fault that names a row some sequence
// of batch does not have: nan-at's --token T at or past a sequence's
// length, a shift-rows of at least a sequence's length (every row would
// repeat its last or first token). The capturer skipped or clamped them
// without a word, so the dump's manifest listed a fault that recorded
// nothing, or one unlike its name. Inject checks the batch given so far
// and Run the batch it prefills (`input` may change it after `inject`).
// The error starts with the fault (Fault.String) and names the sequence
// and its length.
func faultRowsFit(f model.Fault, batch [][]int32) error {
	if len(batch) == 0 {
		return nil
	}
	i := 0 // the shortest sequence, the first of them
	for j, q := range batch {
		if len(q) < len(batch[i]) {
			i = j
		}
	}
	n := len(batch[i])
	switch f.Kind {
	case capture.FaultNaNAt:
		if f.Token >= n {
			return fmt.Errorf("%s: token %d is past sequence %d, which has %s (rows 0..%d): no row to record the NaN in; give --token below %d (the shortest sequence's length)",
				f, f.Token, i, plural.N(n, "token"), n-1, n)
		}
	case capture.FaultShiftRows:
		if k := int(math.Abs(f.Value)); k >= n {
			advice := fmt.Sprintf("give a shift of at most %s (the shortest sequence's length less one)", plural.N(n-1, "row"))
			if n == 1 {
				advice = "a sequence of one token has no other row to shift into"
			}
			return fmt.Errorf("%s: sequence %d has %s: a shift of %s moves every row past its end (each would repeat one token); %s",
				f, i, plural.N(n, "token"), plural.N(k, "row"), advice)
		}
	}
	return nil
}

// actsOn narrows a kind's classes to the sites it really changes: router
// faults act on an MoE's gate only.
func actsOn(kind string, st *model.Site) bool {
	switch kind {
	case model.FaultSkipAllReduce:
		return slices.Contains(st.Tensors, "output") // a RowParallelLinear that reduces
	}
	return true
}

// reducedAbove is, for skip-allreduce at a site that holds a
// RowParallelLinear which does not reduce (a MoE's shared_experts.down_proj),
// the nearest enclosing site whose all-reduce sums its partial sum (the
// MoE block), or "".
func (s *Session) reducedAbove(f model.Fault) string {
	if f.Kind != model.FaultSkipAllReduce || f.Site == "" ||
		!s.anySite(f.Site, func(st *model.Site) bool { return st.Class == "RowParallelLinear" && !actsOn(f.Kind, st) }) {
		return ""
	}
	k, _ := faultKind(f.Kind)
	best := ""
	for _, st := range s.E.Tree.Sites {
		if strings.HasPrefix(f.Site, st.Path+".") && len(st.Path) > len(best) && slices.Contains(k.Classes, st.Class) && actsOn(f.Kind, st) {
			best = st.Path
		}
	}
	return best
}

// anySite reports whether some site's path is at or under prefix ("" any)
// and passes ok (nil: any).
func (s *Session) anySite(prefix string, ok func(*model.Site) bool) bool {
	for _, st := range s.E.Tree.Sites {
		if (prefix == "" || st.Path == prefix || strings.HasPrefix(st.Path, prefix+".")) && (ok == nil || ok(st)) {
			return true
		}
	}
	return false
}

// routedScaling is the model's routed_scaling_factor, or 0.
func (s *Session) routedScaling() float64 {
	data, _, err := modelpath.ConfigJSON(s.E.Path)
	if err != nil {
		return 0
	}
	_, _, consts, err := check.ConfigFacts(data)
	if err != nil {
		return 0
	}
	return consts["routed_scaling_factor"]
}

// ClearFaults removes every injected fault.
func (s *Session) ClearFaults() {
	s.faults = nil
	s.applyFaults()
}

// Faults returns the injected faults, in the order given.
func (s *Session) Faults() []client.Fault {
	out := make([]client.Fault, len(s.faults))
	for i, f := range s.faults {
		out[i] = client.Fault(f)
	}
	return out
}

// applyFaults hands the computation faults to the engine and every fault
// to the observers that record (captures).
func (s *Session) applyFaults() {
	var eng model.Faults
	for _, f := range s.faults {
		if k, _ := faultKind(f.Kind); !k.Recorded {
			eng = append(eng, f)
		}
	}
	s.E.Faults = eng
	var during *model.Batch // the stopped step, which the engine's faults reach from the next step on: the capturer's too
	if s.job != nil && s.job.stop != nil {
		during = s.job.stop.ev.Batch
	}
	for _, o := range s.Observers {
		if c, ok := o.(*capture.Capturer); ok {
			c.SetFaults(s.faults, during)
		}
	}
}

// faultNote is the line every outcome carries while faults are injected.
func (s *Session) faultNote() string {
	if len(s.faults) == 0 {
		return ""
	}
	var fs []string
	for _, f := range s.faults {
		fs = append(fs, f.String())
	}
	return "INJECTED FAULTS (inject clear removes them): " + strings.Join(fs, "; ")
}
