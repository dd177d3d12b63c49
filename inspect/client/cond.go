package client

import "hsdb/inspect/stats"

// CondVars are the names a breakpoint condition may use alone, besides
// statistics: the rank, the step, the decoder layer and the step's tokens.
var CondVars = []string{"rank", "step", "layer", "tokens"}

// CondWords lists every word a condition knows (for completion): the
// statistics (stats.StatNames), then CondVars.
func CondWords() []string { return append(append([]string(nil), stats.StatNames...), CondVars...) }
