package capture

import (
	"fmt"
	"sort"

	"hsdb/inspect/plural"
)

// EAGLE-3's layers in each format's ids: the defaults, and when a model
// is too shallow for them.

// Eagle3IDs are the EAGLE-3 default ids of each format for L decoder
// layers, all the same positions of the residual stream: speculators'
// [2, L/2, L-3] plus L (launch_vllm.py's default), SGLang's
// [1, L/2-1, L-4] (SpecForge prepare_hidden_states.py: "in sglang ... we
// will add 1 to the layer index"), and hsdb's layers whose outputs those
// are, [1, L/2-1, L-4, L-1].
func Eagle3IDs(f Format, layers int) []int {
	L := layers
	switch f {
	case FormatSpeculators:
		return []int{2, L / 2, L - 3, L}
	case FormatSpecForge:
		return []int{1, L/2 - 1, L - 4}
	}
	return []int{1, L/2 - 1, L - 4, L - 1}
}

// Eagle3AuxNote says when a speculators file's aux layers are not the
// three EAGLE-3's drafts read (their fc takes 3·hidden: speculators'
// hidden_states[:, :-1].flatten(1)); ids are the format's ids in file
// order. "" when they are, and for hsdb's own format and SpecForge's
// (whose files of another count are refused, SpecForgeAuxCount). Callers
// add how to give 4 ids where they are given (hsdb capture's --layers,
// the REPL's captured layers).
func Eagle3AuxNote(f Format, ids []int) string {
	switch f {
	case FormatSpeculators:
		if n := len(ids) - 1; n != 3 {
			return fmt.Sprintf("speculators ids %s: the file holds %s before the last (hidden_states[:, :-1]), EAGLE-3's draft reads 3 (4 ids)", joinInts(ids), plural.N(n, "aux id"))
		}
	}
	return ""
}

// eagle3Reads says what EAGLE-3 reads in format f: why a shallow model's
// --layers should still hold as many ids as Eagle3IDs.
func eagle3Reads(f Format) string {
	switch f {
	case FormatSpeculators:
		return "speculators trains on hidden_states[:, :-1], three aux ids, and hidden_states[:, -1]"
	case FormatSpecForge:
		return "SpecForge's draft reads aux_hidden_state [1, len, 3·hidden]"
	}
	return "EAGLE-3's three aux layers and the last"
}

// Eagle3Shallow says whether format f's EAGLE-3 ids (Eagle3IDs) fit a
// model of L decoder layers: the ids; clash, "" when they fit, else the
// first that does not ("hsdb id 1 comes twice": the model is too shallow
// for EAGLE-3's spread of 1, N/2-1, N-4, N-1); and use, distinct ids of
// f's range to name instead (eagle3Usable).
//
// EAGLE-3's aux layers are decoder layers' outputs, so speculators' id 0
// (the embeddings, hsdb's -1) is no EAGLE-3 id: at L = 3 speculators'
// 2, N/2, N-3 is 2, 1, 0, the positions of hsdb's 1, 0, -1 and SGLang's
// 1, 0, -1, which hsdb and SpecForge refuse (SpecForge's
// HFEagle3TargetModel raises "Layer index -1 out of bounds"); the spread
// has turned over (low 2 > mid 1 > high 0). speculators' launch_vllm.py
// passes its default to vLLM unchecked, which would read the embeddings
// as the deepest aux layer; the three formats now refuse it alike. An
// explicit --layers 0,... still takes id 0.
func Eagle3Shallow(f Format, L int) (ids []int, clash string, use []int) {
	ids = Eagle3IDs(f, L)
	lo, hi := eagle3Range(f, L)
	seen := map[int]bool{}
	for _, id := range ids {
		switch {
		case f == FormatSpeculators && id == 0:
			clash = fmt.Sprintf("speculators id 0 is the embeddings, no decoder layer's output: hsdb id -1, outside 0..%d", L-1)
		case id < lo || id > hi:
			clash = fmt.Sprintf("%s id %d is outside %d..%d", f, id, lo, hi)
		case seen[id]:
			clash = fmt.Sprintf("%s id %d comes twice", f, id)
		}
		if clash != "" {
			return ids, clash, eagle3Usable(f, ids, L)
		}
		seen[id] = true
	}
	return ids, "", ids
}

// eagle3Range is the ids of format f that EAGLE-3 may take on a model of
// L decoder layers: the decoder layers' outputs, 0..L-1 in hsdb's and
// SGLang's ids, 1..L in speculators' (whose id 0, the embeddings, is no
// layer's output).
func eagle3Range(f Format, L int) (lo, hi int) {
	if f == FormatSpeculators {
		return 1, L
	}
	return 0, L - 1
}

// eagle3Usable is what is left of the EAGLE-3 ids when the model is too
// shallow for them: those in EAGLE-3's range of format f (eagle3Range:
// speculators' id 0, the embeddings, left out), each once, then the
// deepest ids of the range not yet taken (for SpecForge, below the last
// layer first) until the list is as long as
// ids (EAGLE-3 reads three aux layers: SpecForge's aux_hidden_state is
// [1, len, 3·hidden], the width its draft's fc takes, and speculators'
// hidden_states[:, :-1] holds three ids before the last), or the range
// is used up; ascending (the last is the deepest, as the trainers
// expect). Always a list PlanLayers accepts for L >= 1.
func eagle3Usable(f Format, ids []int, L int) []int {
	lo, hi := eagle3Range(f, L)
	var out []int
	seen := map[int]bool{}
	for _, id := range ids {
		if id >= lo && id <= hi && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	// SpecForge's ids are aux layers only (the last layer's output goes in
	// as hidden_state, normed): the deepest below the last come first, so
	// that the three are the aux layers the other formats' suggestions
	// hold (hsdb 1,2,3,4 and SpecForge 1,2,3 at L = 5, not 1,3,4); the
	// last layer only when the model has no other.
	top := hi
	if f == FormatSpecForge {
		top = hi - 1
	}
	for id := top; id >= lo && len(out) < len(ids); id-- {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if len(out) < len(ids) && !seen[hi] {
		out = append(out, hi)
	}
	sort.Ints(out)
	return out
}
