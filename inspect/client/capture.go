package client

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/inspect/capture"
)

// Breakpoint is a breakpoint or watch as `info break` lists it: Kind
// "break" (Pattern: a site pattern) or "watch" (Tensor), its
// condition, whether it is enabled or one-shot, how often it stopped, and
// how many sites of the model it can stop at. Breakpoints and watches
// share one numbering, as gdb's.
type Breakpoint struct {
	ID        int    `json:"id"`
	Kind      string `json:"kind"`
	Pattern   string `json:"site,omitempty"`
	Tensor    string `json:"tensor,omitempty"`
	Cond      string `json:"cond,omitempty"`
	Enabled   bool   `json:"enabled"`
	Temporary bool   `json:"temporary"`
	Hits      int    `json:"hits"`
	Sites     int    `json:"sites"`
	// Ignore is how many more crossings that would stop are passed
	// (gdb's ignore count); crossings passed still count as Hits.
	Ignore int `json:"ignore,omitempty"`
	// AlsoAt, on a breakpoint Client.Break has just set, are the ids of
	// the first (at most AlsoAtMax, ascending) breakpoints already set at
	// the same site pattern (with or without "model."), AlsoCount how many
	// there are in all: gdb's "Note: breakpoint 1 also set at". Empty on
	// every other Breakpoint and not in JSON.
	AlsoAt    []int `json:"-"`
	AlsoCount int   `json:"-"`
}

// AlsoAtMax is the most ids Breakpoint.AlsoAt holds: the note names that
// many and counts the rest.
const AlsoAtMax = 8

// CaptureSpec is one recorded tensor: a decoder layer's output (Layer >=
// 0, Key "hidden_states.{layer}") or a site's tensor (Layer -1, Key
// "SITE:TENSOR"); inspect/capture's type.
type CaptureSpec = capture.CaptureSpec

// CaptureList is `capture list`: what is captured (in order), what a layer
// capture records (stream, hidden_states or residual), and per sequence
// recorded so far its token count and the rows of each key.
type CaptureList struct {
	Specs     []CaptureSpec `json:"specs"`
	What      string        `json:"what"`
	Sequences []CapturedSeq `json:"sequences"`
}

// CapturedSeq is one sequence's recording: its number in the batch, its
// tokens, and the rows recorded per capture key (decode steps add rows).
type CapturedSeq struct {
	Seq    int            `json:"seq"`
	Tokens int            `json:"tokens"`
	Rows   map[string]int `json:"rows"`
}

// DumpRequest is how `dump` writes: Force replaces an existing directory;
// DType ("" for the model's, bf16 for a trainer format; f32, bf16 or f16)
// is the dtype of the captured tensors in the files; Format is hsdb ("")
// or a trainer's layout, speculators or specforge (capture.PlanCaptured:
// ids from the captured layers), Compress gzips SpecForge samples.
type DumpRequest struct {
	Force    bool
	DType    string
	Format   string
	Compress bool
}

// Plan is a capture job's file format and layer ids resolved against the
// model (inspect/capture's type; capture.PlanLayers makes one).
type Plan = capture.Plan

// Manifest is a dump's manifest.json (design.md; inspect/capture's type).
type Manifest = capture.Manifest

// RuleWidth is the width of the rule-name column where rules are printed
// (capture.RuleWidth: every rule name fits in it).
const RuleWidth = capture.RuleWidth

// Eagle3AuxNote says when a trainer-format dump's aux layers are not the
// three EAGLE-3's drafts read (capture.Eagle3AuxNote), "" otherwise.
func Eagle3AuxNote(m *Manifest) string {
	n := capture.Eagle3AuxNote(capture.Format(m.Capture.Format), m.Capture.FormatIDs)
	if n != "" && capture.Format(m.Capture.Format) == capture.FormatSpeculators {
		n += "; the REPL's ids are the captured layers + 1, and 0 with `capture site model.embed_tokens hidden_states`"
	}
	return n
}

// Eagle3Layers are the hsdb layers of EAGLE-3's default ids for a model of
// n decoder layers, [1, n/2-1, n-4, n-1] (capture.Eagle3IDs: the outputs
// speculators' ids 2, n/2, n-3, n and SGLang's 1, n/2-1, n-4 name, and
// the last), as `hsdb capture --layers eagle3` takes them; an error when
// the model has too few layers for four distinct ones (capture.PlanLayers).
func Eagle3Layers(n int) ([]int, error) {
	if ids, clash, use := capture.Eagle3Shallow(capture.FormatHsdb, n); clash != "" {
		// In the debugger's words: `capture layers`, not --layers.
		return nil, fmt.Errorf("%w: eagle3 is hsdb layers %s for %d decoder layers (1, N/2-1, N-4, N-1), too few layers for EAGLE-3's spread (%s); name distinct layers in 0..%d, %d of them where the model has that many (EAGLE-3's three aux layers and the last), e.g. capture layers %s",
			capture.ErrFormat, intList(ids), n, clash, n-1, len(ids), intList(use))
	}
	p, err := capture.PlanLayers(capture.FormatHsdb, "eagle3", n, ParseLayers)
	if err != nil {
		return nil, err
	}
	return p.HsdbLayers(), nil
}

// LeftOut are the keys of the captures a trainer-format dump m did not
// write (capture.LeftOut), nil when it wrote them all.
func LeftOut(m *Manifest, specs []CaptureSpec) []string {
	return capture.LeftOut(capture.Format(m.Capture.Format), specs)
}

// LeftOutNote says which captures a trainer-format dump m did not write
// (capture.LeftOut: site captures such as a router's topk_ids, which
// speculators' and SpecForge's files have no place for), "" when none.
func LeftOutNote(m *Manifest, specs []CaptureSpec) string {
	left := LeftOut(m, specs)
	if len(left) == 0 {
		return ""
	}
	also := " and the embeddings as id 0" // speculators
	if capture.Format(m.Capture.Format) == capture.FormatSpecForge {
		also = " and model.norm's output as hidden_state"
	}
	return fmt.Sprintf("not written: %s (%s files hold only the layers' residual stream%s; `dump DIR` without --format writes every capture)",
		strings.Join(left, ", "), m.Capture.Format, also)
}

// CheckRequest is what `check` and `diff` know beyond the path: the layers
// the capture should hold (nil: unknown), the tensor-parallel world size it
// ran at (0: try 2, 4, 8, 16), the sequence lengths a file holds (nil:
// unknown), and NoModel to check from config.json alone without running
// this model.
type CheckRequest struct {
	Layers  []int
	TP      int
	SeqLens []int
	NoModel bool
	// Output is how the report's Lines render: "" (full text; a
	// directory of more than 20 files is summarized), "json" (one JSON
	// object per file, snake_case keys), "summary" (counts per finding and
	// the first files of each), "json-summary" (the summary as one JSON
	// object, check.SummaryJSON) or "full" (every file's text, however
	// many).
	Output string
}

// CheckReport is `check`'s or `diff`'s report on a path: its lines as hsdb
// prints them, whether it failed (check: a rule failed or a file could not
// be read; diff: an entry departs from the model), and how many capture
// files the path held (0 when the path itself could not be read). For
// diff, Comparable says whether any file had an entry to judge (rows
// aligned with input_ids and a claimed layer); without one diff has no
// verdict (`hsdb diff` exits 2).
type CheckReport struct {
	Path       string   `json:"path"`
	Failed     bool     `json:"failed"`
	Lines      []string `json:"lines"`
	Files      int      `json:"files"`
	Comparable bool     `json:"comparable,omitempty"`
	// Exit is the verdict check and diff share, as their exit code: 0
	// valid, 1 problems found, 2 unreadable or nothing comparable.
	Exit int `json:"exit"`
}

// Inputs are the sequences of a capture job (inspect/capture's type: ids,
// optional loss masks, sequence ids, where they came from).
type Inputs = capture.Inputs

// JobRequest is `hsdb capture`: the layers to record (what: stream,
// hidden_states or residual), the inputs, the dump directory Out (Force
// replaces an existing one or another job's staging directory), the dtype
// of the files ("" for the model's; f32, bf16 or f16) and the tokens of
// one flattened batch (0: 4096). Progress, when set, is called before the
// first batch and after each; AfterBatch after each batch is written
// (tests stop a job midway with it).
type JobRequest struct {
	// Plan, when set, is the format and what to capture (Layers is then
	// ignored); Compress gzips SpecForge samples; Writers is how many
	// files are written at once while the next batch runs (0: 4).
	Plan           *Plan
	Compress       bool
	Writers        int
	Layers         []int
	What           string
	Inputs         *Inputs
	Out            string
	Force          bool
	DType          string
	MaxBatchTokens int
	Progress       func(JobProgress)
	AfterBatch     func(done int)
}

// JobProgress is a capture job's state (inspect/capture's type).
type JobProgress = capture.JobProgress

// JobResult is a finished capture job: its manifest and final progress
// (inspect/capture's type).
type JobResult = capture.JobResult

// MaxLayer bounds the layer numbers ParseLayers accepts: config.json's
// num_hidden_layers is at most 4096 (model.SizeLimits), so a range past it
// (0-2000000000) is a typo, not a list to build.
const MaxLayer = 1 << 12

// ParseLayers reads a layer list "2,30,58,60" (spaces allowed, ranges
// "0-3" allowed) into ints in the order given. Errors: an empty list, a
// non-integer, a negative layer, a range that runs backwards (3-1), the
// word eagle3 (which only the capturing commands resolve), a layer of
// MaxLayer or more, a layer given twice.
func ParseLayers(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		lo, hi := f, f
		if a, b, ok := strings.Cut(f, "-"); ok && a != "" {
			lo, hi = a, b
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a >= 0 && b >= 0 && b < a {
			return nil, fmt.Errorf("layer range %q runs backwards: write %d-%d", f, b, a)
		}
		if strings.EqualFold(f, "eagle3") {
			return nil, fmt.Errorf("eagle3 is taken where layers are captured (hsdb capture --layers, the debugger's capture layers); here give hsdb layer numbers: EAGLE-3's are 1, N/2-1, N-4, N-1 of N decoder layers")
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("layer %q is not a non-negative integer or range a-b", f)
		}
		if b >= MaxLayer {
			return nil, fmt.Errorf("layer %q: layers are numbered below %d (no model has more decoder layers)", f, MaxLayer)
		}
		for n := a; n <= b; n++ {
			if seen[n] {
				return nil, fmt.Errorf("layer %d given twice", n)
			}
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no layers in %q", s)
	}
	return out, nil
}

// intList renders ints as "1,1,0,3".
func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
