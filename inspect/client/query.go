package client

import (
	"hsdb/inspect/stats"
)

// TensorReport is `print TENSOR`: one row of statistics per rank over the
// selected rows, and for sharded or partial tensors (world > 1) a row for
// the gathered full tensor (Rank -1; Label "gathered" or "sum").
type TensorReport struct {
	Site     string      `json:"site"`
	Tensor   string      `json:"tensor"`
	Step     int         `json:"step"`
	Rows     Range       `json:"rows"`
	Seq      int         `json:"seq"`
	Ranks    []RankStats `json:"ranks"`
	Gathered *RankStats  `json:"gathered,omitempty"`
	// Rank0Alone is set for a replicated tensor on three ranks or more
	// whose every other copy differs from rank 0's while they agree with
	// each other: rank 0's copy is the one that diverged, although every
	// other row is the one marked Diverged (the column is measured from
	// rank 0).
	Rank0Alone bool `json:"rank0_alone,omitempty"`
}

// RankStats is one row of a TensorReport: the shape of the selected slice,
// the device dtype, the sharding label, the statistics and, for a
// replicated tensor on ranks other than 0, the largest |Δ| against rank 0
// over the slice (Diverged: some element differs, NaNs included).
type RankStats struct {
	Rank  int    `json:"rank"`
	Label string `json:"label"`
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
	Shard string `json:"shard"`
	stats.Stats
	DiffRank0 *float64 `json:"max_abs_diff_rank0,omitempty"`
	Diverged  bool     `json:"diverged,omitempty"`
	// IDs are the id statistics of an integer tensor (min, max, distinct
	// ids, out of range); nil for a float one.
	IDs *stats.IDs `json:"ids,omitempty"`
}

// ValuesReport is `print TENSOR[rows, cols]`: the values per rank (columns
// index each rank's own tensor) and, for sharded or partial tensors, of the
// gathered full tensor (columns index the full tensor).
type ValuesReport struct {
	Site     string       `json:"site"`
	Tensor   string       `json:"tensor"`
	Step     int          `json:"step"`
	Ranks    []RankValues `json:"ranks"`
	Gathered *RankValues  `json:"gathered,omitempty"`
}

// RankValues are one rank's selected values, Values[i][j] being row
// Rows.Lo+i, column Cols.Lo+j (rows counted in the whole tensor). Missing
// says why a rank shows none when the column index lies outside its own
// columns (a sharded tensor whose ranks hold different widths: the last
// vocab shard, a rank holding only padding).
type RankValues struct {
	Rank    int         `json:"rank"`
	Label   string      `json:"label"`
	Shard   string      `json:"shard"`
	Rows    Range       `json:"rows"`
	Cols    Range       `json:"cols"`
	Values  [][]float64 `json:"values"`
	Missing string      `json:"missing,omitempty"`
	// FullCols are the full tensor's columns that Cols (the rank's own)
	// are, for a rank of a sharded tensor; nil otherwise.
	FullCols *Range `json:"full_cols,omitempty"`
}

// MaxValues is the most values one print of values shows per rank.
const MaxValues = 4096

// HistReport is `hist TENSOR`: a histogram of one rank's or the gathered
// tensor's selected values, with their statistics.
type HistReport struct {
	Site   string      `json:"site"`
	Tensor string      `json:"tensor"`
	Step   int         `json:"step"`
	Source string      `json:"source"`
	Shape  []int       `json:"shape"`
	Stats  stats.Stats `json:"stats"`
	Hist   stats.Hist  `json:"hist"`
	// IDs count each id of an integer tensor (hist shows a bar per id);
	// nil for a float one.
	IDs *stats.IDs `json:"ids,omitempty"`
}

// TopEntry is a channel with the largest |value| and where it occurs: Row
// is the row of the site tensor, Token the batch token that row belongs to
// (they differ at lm_head, whose logits rows are each sequence's last
// token only: Batch.LogitRows), and the token's sequence and position in
// it. Token, Seq and Pos are -1 when the rows are not tokens.
type TopEntry struct {
	stats.Channel
	// Text is the token text of the channel when it is a vocabulary id (the
	// logits of lm_head) and the model has a tokenizer.
	Text  string `json:"text,omitempty"`
	Token int    `json:"token"`
	Seq   int    `json:"seq"`
	Pos   int    `json:"pos"`
}

// TopReport is `top TENSOR K`: the K channels with the largest |value|
// and the median |value| of the source's finite elements (0: no ratio is
// given; nil, JSON null, when the source has no finite element: then
// Channels is empty too).
type TopReport struct {
	Site     string     `json:"site"`
	Tensor   string     `json:"tensor"`
	Step     int        `json:"step"`
	Source   string     `json:"source"`
	MedianAb *float64   `json:"median_abs"`
	Channels []TopEntry `json:"channels"`
}

// RankPair compares two ranks' copies of a tensor. Relation is "equal"
// (every element equal), "diverged" (copies that should be equal differ:
// First is the first differing [row, col] of the selection, A and B the
// values there, MaxAbs the largest |Δ|), "shard of" (the ranks hold
// different columns of one tensor: Detail names them) or "addends" (partial
// sums, different by design).
type RankPair struct {
	A        int     `json:"a"`
	B        int     `json:"b"`
	Relation string  `json:"relation"`
	Detail   string  `json:"detail,omitempty"`
	Differ   int64   `json:"differ,omitempty"`
	First    []int   `json:"first,omitempty"`
	ValA     float64 `json:"value_a,omitempty"`
	ValB     float64 `json:"value_b,omitempty"`
	MaxAbs   float64 `json:"max_abs_diff,omitempty"`
	Expected string  `json:"expected"`
}

// RanksReport is `ranks TENSOR`: the sharding label of each rank and every
// pair of ranks compared (empty, not nil, with one rank).
type RanksReport struct {
	Site   string     `json:"site"`
	Tensor string     `json:"tensor"`
	Step   int        `json:"step"`
	Shards []string   `json:"shards"`
	Pairs  []RankPair `json:"pairs"`
}
