package client

// Stop describes where a pass stopped: the site, the step (0 the prefill,
// k the k-th decode step of `gen`), the token batch of that step and why.
// Every rank has reached the site when a Stop is reported.
type Stop struct {
	Site    string   `json:"site"`
	Class   string   `json:"class"`
	Depth   int      `json:"depth"`
	Layer   int      `json:"layer"`
	Step    int      `json:"step"`
	Tokens  int      `json:"tokens"`
	SeqLens []int    `json:"seq_lens"`
	Seqs    []int    `json:"seqs"`
	Reasons []string `json:"reasons"`
	// Breakpoints are the ids of the breakpoints and watches that fired.
	Breakpoints []int `json:"breakpoints,omitempty"`
	// Tensors are the names the site shows (what print accepts here).
	Tensors []string `json:"tensors"`
	// Notes say what makes this pass differ from the full model's (only
	// some decoder layers loaded); set on the first stop of `run` and `gen`.
	Notes []string `json:"notes,omitempty"`
	// Edits describe the edits (`set var`, `patch`) applied so far in this
	// pass: what the stop's values depend on besides the model.
	Edits []string `json:"edits,omitempty"`
}

// StepSeq is one sequence of the stopped step's token batch (`info
// batch`): the user's number of the sequence, the position of its first
// token in this step (0 in the prefill; in a decode step, the tokens the
// sequence held before it) and its token ids in this step ([tokens] of
// the step's flattened batch, as vLLM flattens it).
type StepSeq struct {
	Seq int     `json:"seq"`
	Pos int     `json:"pos"`
	IDs []int32 `json:"ids"`
}

// TraceLine is one site visited while tracing: the site and the shape and
// sharding of each tensor it shows on rank 0.
type TraceLine struct {
	Step    int           `json:"step"`
	Site    string        `json:"site"`
	Class   string        `json:"class"`
	Depth   int           `json:"depth"`
	Tensors []TensorShape `json:"tensors"`
}

// TensorShape names a tensor with its shape and sharding label on one rank.
type TensorShape struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	Shard string `json:"shard"`
}

// Done reports a job that ran to its end: whether it ran a prefill, how
// many decode steps, the tokens each sequence generated (the ids fed to the
// decode steps) and the greedy next token of each sequence after the last
// step, with their text when the model has a tokenizer.
type Done struct {
	Prefill       bool      `json:"prefill"`
	DecodeSteps   int       `json:"decode_steps"`
	Generated     [][]int32 `json:"generated"` // one list per sequence, empty after a prefill alone
	GeneratedText []string  `json:"generated_text,omitempty"`
	Next          []int32   `json:"next"`
	NextText      []string  `json:"next_text,omitempty"`
	SeqLens       []int     `json:"seq_lens"`
	// Notes: as Stop.Notes, when `run` or `gen` ran to the end at once.
	Notes []string `json:"notes,omitempty"`
}

// Outcome is what a command that runs the model returns: a Stop, or Done
// when the job ran to its end.
type Outcome struct {
	Stop *Stop `json:"stop,omitempty"`
	Done *Done `json:"done,omitempty"`
}

// Frame is one level of the call chain at a stop, innermost first and
// numbered as gdb numbers frames (Level 0 the stopped site, counting
// outward; the root model object last): the module's vLLM class, its site path ("" for the root model object, which
// has no site), and per rank the shapes of its inputs (Inputs[rank]) and,
// for the innermost frame (the stopped site), of its outputs.
type Frame struct {
	Level   int             `json:"level"`
	Class   string          `json:"class"`
	Site    string          `json:"site"`
	Inputs  [][][]int       `json:"inputs"`
	Outputs [][]TensorShape `json:"outputs,omitempty"`
	// Devices, on the innermost frame, names each rank's device at the
	// stop when it is one part of the rank's (a pipeline stage's worker:
	// "cpu:2 (stage 1)"); empty otherwise.
	Devices []string `json:"devices,omitempty"`
}
