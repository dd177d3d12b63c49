package model

import "fmt"

// Batch is the token batch of one forward step, flattened as vLLM does: the
// sequences' tokens concatenated along one dimension, with their lengths. A
// prefill step holds whole prompts; a decode step one token per sequence.
type Batch struct {
	IDs     []int32 // [tokens] token ids
	Pos     []int32 // [tokens] position of each token within its sequence
	SeqLens []int   // tokens of each sequence in this step; sums to len(IDs)
	Seqs    []int   // the user's number of each sequence (0-based)
	Slots   []int   // KV-cache slot of each sequence
	Step    int     // 0 for the prefill, k for the k-th decode step
	// AllLogits asks for logits at every token; otherwise only at the last
	// token of each sequence.
	AllLogits bool
}

// Tokens returns the number of tokens in the batch.
func (b *Batch) Tokens() int { return len(b.IDs) }

// SeqOf returns, for every token, the index (into SeqLens) of its sequence.
func (b *Batch) SeqOf() []int {
	out := make([]int, 0, len(b.IDs))
	for s, n := range b.SeqLens {
		for range n {
			out = append(out, s)
		}
	}
	return out
}

// SeqStart returns the first token row of sequence index s of the batch.
func (b *Batch) SeqStart(s int) int {
	off := 0
	for i := range s {
		off += b.SeqLens[i]
	}
	return off
}

// LogitRows returns the token rows whose logits the step returns.
func (b *Batch) LogitRows() []int32 {
	if b.AllLogits {
		rows := make([]int32, len(b.IDs))
		for i := range rows {
			rows[i] = int32(i)
		}
		return rows
	}
	rows := make([]int32, 0, len(b.SeqLens))
	off := 0
	for _, n := range b.SeqLens {
		off += n
		rows = append(rows, int32(off-1))
	}
	return rows
}

// Validate checks the batch's internal consistency and that every id is in
// [0, vocab): an out-of-range id names the sequence and token.
func (b *Batch) Validate(vocab int) error {
	total := 0
	for _, n := range b.SeqLens {
		if n <= 0 {
			return fmt.Errorf("batch: a sequence with %d tokens", n)
		}
		total += n
	}
	if total != len(b.IDs) || len(b.Pos) != len(b.IDs) || len(b.Slots) != len(b.SeqLens) || len(b.Seqs) != len(b.SeqLens) {
		return fmt.Errorf("batch: %d ids, %d positions, seq_lens %v (sum %d), %d slots", len(b.IDs), len(b.Pos), b.SeqLens, total, len(b.Slots))
	}
	seq := b.SeqOf()
	for i, id := range b.IDs {
		if id < 0 || int(id) >= vocab {
			s := seq[i]
			return fmt.Errorf("token id %d (sequence %d, token %d) is outside the vocabulary [0, %d)", id, b.Seqs[s], i-b.SeqStart(s), vocab)
		}
	}
	return nil
}

// CheckPositions returns an error naming the first sequence with a token at
// position maxPos or beyond (max_position_embeddings: vLLM refuses
// sequences longer than max_model_len, and each position costs a KV-cache
// row, so a `gen` of a billion steps would grow the cache until memory runs
// out). maxPos <= 0 (unknown) checks nothing.
func (b *Batch) CheckPositions(maxPos int) error {
	if maxPos <= 0 {
		return nil
	}
	for i, p := range b.Pos {
		if int(p) >= maxPos {
			s := b.SeqOf()[i] // only on the error path: SeqOf allocates per token
			return fmt.Errorf("sequence %d would reach %d tokens, more than max_position_embeddings %d", b.Seqs[s], int(p)+1, maxPos)
		}
	}
	return nil
}

// fromStart reports whether every sequence of b begins at position 0 in
// this step (it reads nothing cached).
func (b *Batch) fromStart() bool {
	t := 0
	for _, n := range b.SeqLens {
		if n > 0 && (t >= len(b.Pos) || b.Pos[t] != 0) {
			return false
		}
		t += n
	}
	return true
}
