package capture

import (
	"strconv"
	"strings"
)

// Status is the outcome of one validation rule.
type Status uint8

const (
	// Pass: the rule holds.
	Pass Status = iota
	// Fail: the rule is violated; the file is not a valid capture.
	Fail
	// Skip: the rule could not be checked (no model given, no layers
	// requested, not an hsdb dump); Detail says what it needs.
	Skip
)

// String returns "pass", "FAIL" or "skip".
func (s Status) String() string {
	switch s {
	case Pass:
		return "pass"
	case Fail:
		return "FAIL"
	}
	return "skip"
}

// Rule names, in the order check reports them (design.md, "Validation
// rules").
const (
	RuleStructure  = "structure"       // input_ids and hidden states found, ids integer
	RuleLayerCount = "layer count"     // as many layers as requested, with the labels requested
	RuleShape      = "shape"           // every entry [len(input_ids), hidden_size]
	RuleOneSeq     = "one sequence"    // not a flattened batch of several sequences
	RuleDType      = "dtype"           // float, one dtype, as declared; loss_mask matches
	RuleFinite     = "finite"          // no NaN or Inf
	RuleValues     = "values"          // not all zeros, no constant rows, nothing saturated at a dtype's max
	RuleLossMask   = "loss_mask"       // loss_mask aligned with input_ids (its spans start and end at the same tokens)
	RuleDistinct   = "layers distinct" // no two layers hold identical data
	RuleReplicas   = "replicas equal"  // replicated tensors equal across ranks (recorded at capture)
	RuleChecksums  = "checksums"       // sha256 of each tensor as the manifest records
	RuleMatch      = "matches model"   // close to hsdb's forward pass at the layer claimed
	RuleRouter     = "router top-k"    // captured router choices equal the model's on the file's ids
)

// Rule names of a dump directory as a whole (check DIR on an hsdb dump),
// reported before its files' rules.
const (
	RuleNotInjected = "not injected"   // no fault recorded under `inject` (manifest injected_faults)
	RuleModel       = "model"          // the dump's model is --model's (architecture and sizes)
	RuleComplete    = "complete"       // the manifest is marked complete
	RuleFiles       = "files"          // every listed file is there, and nothing else
	RuleSeqCount    = "sequence count" // as many sequences as the job's input holds (also a dump's validation)
	RuleValidated   = "validated"      // every file re-read and validated when the dump was written
)

// RuleWidth is the width of the rule-name column where check, capture and
// dump print rules ("  pass  structure         ..."): every Rule* name
// fits in it (a test reads the names from this file).
const RuleWidth = 16

// joinInts renders layers as a manifest and rule details write them:
// "2,30,58,60".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
