package client

// EditRequest is `set var TENSOR[ROWS, COLS] = VALUE` at a stop: which
// tensor of the stopped site, which elements (rows counted within Slice's
// rows as print counts them; columns of the full tensor, so that a sharded
// tensor's ranks each write the columns they hold), and the new value:
// Op "=" assigns Value (a number, NaN or ±Inf), "*", "+", "-" and "/"
// combine each element with Value. Slice.Rank >= 0 edits that rank's copy
// only. Persist keeps the edit for later runs (applied at the same site
// and step of every pass until `delete edits`).
type EditRequest struct {
	Tensor   string
	Index    Index
	HasIndex bool
	Slice    Slice
	Op       string
	Value    float64
	Persist  bool
}

// Edit is one edit as `info edits` lists it: its id, where (site, step)
// and what it changed, on which ranks (-1: all), whether it persists over
// runs, whether it is armed (a patch waiting for the next run), and how
// many times it has been applied. Text is its one-line description, as
// stops and dump manifests quote it.
type Edit struct {
	ID      int    `json:"id"`
	Site    string `json:"site"`
	Step    int    `json:"step"`
	Tensor  string `json:"tensor"`
	Rows    Range  `json:"rows"`
	Cols    Range  `json:"cols"`
	Rank    int    `json:"rank"`
	What    string `json:"what"`
	Persist bool   `json:"persist"`
	Armed   bool   `json:"armed"`
	Applied int    `json:"applied"`
	Text    string `json:"text"`
}

// PatchRequest is `patch TENSOR from DUMP [--seq S]`: replace a tensor of
// the stopped site (or, with Site set, of that site in the next run) by
// the one an hsdb dump at Dump holds for the same site, sequence by
// sequence (Seq >= 0: only that sequence of the batch). Rows are matched by
// position within each sequence; the lengths must agree.
type PatchRequest struct {
	Site   string
	Tensor string
	Dump   string
	Seq    int
}

// LensToken is one of a sequence's top tokens under the logit lens: its
// id, text (when the model has a tokenizer), logit and probability.
type LensToken struct {
	ID    int32   `json:"id"`
	Text  string  `json:"text,omitempty"`
	Logit float64 `json:"logit"`
	Prob  float64 `json:"prob"`
}

// LensSeq is one sequence's lens row: its batch sequence, the token row
// (its last token in the step) and the top tokens.
type LensSeq struct {
	Seq int         `json:"seq"`
	Row int         `json:"row"`
	Top []LensToken `json:"top"`
}

// LensReport is `lens K` at a stop: the final norm and lm_head applied to
// the site's stream (the logit lens, nostalgebraist 2020), top K per
// sequence, from the logits gathered over every rank's vocabulary shard.
type LensReport struct {
	Site   string    `json:"site"`
	Step   int       `json:"step"`
	Tensor string    `json:"tensor"`
	Seqs   []LensSeq `json:"seqs"`
	// Notes say when the ranks' copies of the replicated tensor differ in
	// the rows the lens reads (a `set var --rank` edit, a diverged rank):
	// each rank's vocabulary shard then comes from its own copy.
	Notes []string `json:"notes,omitempty"`
}

// AttnReport is `print attn_probs --head H --seq S`: the attention
// probabilities of query head Head (a head of the whole model; Rank is the
// first rank that holds it, KVHead the key head it reads, HF's repeat_kv)
// for sequence Seq of the batch, recomputed from the site's q and k:
// Probs[i][j] = softmax_j(q_i·k_j·Scale) over keys j <= i (the last Window
// of them when Window > 0), 0 for the others; RowSums are each row's sum.
type AttnReport struct {
	Site    string      `json:"site"`
	Step    int         `json:"step"`
	Head    int         `json:"head"`
	Heads   int         `json:"heads"`
	KVHead  int         `json:"kv_head"`
	Rank    int         `json:"rank"`
	Ranks   []int       `json:"ranks"`
	Seq     int         `json:"seq"`
	Scale   float64     `json:"scale"`
	Window  int         `json:"window,omitempty"`
	Probs   [][]float64 `json:"probs"`
	RowSums []float64   `json:"row_sums"`
}

// SaveReport is `save TENSOR FILE`: what was written where — the site,
// tensor and step, the file and its format (safetensors or npy), the
// shape [rows, cols] in f32, and the source (the gathered or summed full
// tensor, rank 0's copy of a replicated one, or the rank asked for).
type SaveReport struct {
	Site   string `json:"site"`
	Tensor string `json:"tensor"`
	Step   int    `json:"step"`
	Path   string `json:"path"`
	Format string `json:"format"`
	Key    string `json:"key,omitempty"`
	Shape  []int  `json:"shape"`
	Source string `json:"source"`
	Rows   Range  `json:"rows"`
}

// CompareRow is one tensor of the stop against a dump, for one sequence:
// the dump key, cosine and max |Δ| over the sequence's rows of this step,
// the reference's max |value|, and the first token (position in the
// sequence) whose row departs beyond the tolerance (-1: none). IDsDiffer
// counts the tokens whose ids differ from the dump's (the comparison
// assumes the same inputs).
type CompareRow struct {
	Tensor string `json:"tensor"`
	// Rank is -1 for the full tensor (gathered, summed, or a replicated
	// tensor whose ranks hold equal rows for the sequence); r for rank r's
	// own copy of a replicated tensor whose copies differ there (each
	// rank then gets a row).
	Rank       int     `json:"rank"`
	Key        string  `json:"key"`
	Seq        int     `json:"seq"`
	Tokens     int     `json:"tokens"`
	Cosine     float64 `json:"cosine"`
	MaxAbs     float64 `json:"max_abs_diff"`
	RefMax     float64 `json:"ref_max_abs"`
	FirstToken int     `json:"first_token"`
	IDsDiffer  int     `json:"ids_differ"`
	// Exact is set for a tensor the dump holds in an integer dtype (a
	// router's topk_ids): a row departs where any value differs, whatever
	// the report's tolerance.
	Exact bool `json:"exact"`
}

// CompareReport is `compare DUMP` at a stop: every tensor of the site the
// dump holds, per sequence, with the tolerance used (cosine at least
// CosMin and max |Δ| at most Rel of the reference's max |value|, the
// dump's dtype's, as `diff` uses).
type CompareReport struct {
	Site   string       `json:"site"`
	Step   int          `json:"step"`
	Dump   string       `json:"dump"`
	CosMin float64      `json:"cos_min"`
	Rel    float64      `json:"rel"`
	Rows   []CompareRow `json:"rows"`
}
