package debug

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"hsdb/inspect/client"
)

// SetBatch makes seqs the token batch of the next `run` (flattened as vLLM
// does: sequence i's tokens follow sequence i-1's). Errors: no sequence, an
// empty sequence, an id outside [0, vocab_size), naming sequence and token.
func (s *Session) SetBatch(seqs [][]int32) error {
	if len(seqs) == 0 {
		return fmt.Errorf("input: no sequences")
	}
	vocab := s.E.Dims.Vocab
	for i, q := range seqs {
		if len(q) == 0 {
			return fmt.Errorf("input: sequence %d is empty", i)
		}
		for j, id := range q {
			if id < 0 || int(id) >= vocab {
				return fmt.Errorf("input: token id %d (sequence %d, token %d) is outside the vocabulary [0, %d)", id, i, j, vocab)
			}
		}
		if len(q) > s.E.Dims.MaxPos {
			return fmt.Errorf("input: sequence %d has %d tokens, more than max_position_embeddings %d", i, len(q), s.E.Dims.MaxPos)
		}
	}
	s.batch = seqs
	return nil
}

// Batch returns the current token batch (nil before `input`).
func (s *Session) Batch() [][]int32 { return s.batch }

// Encode returns BOS followed by the tokenizer's ids of text (llama2.c's
// run.c and vLLM's default for Llama tokenizers both prepend BOS). Errors:
// ErrNoTokenizer, or the tokenizer's own.
func (s *Session) Encode(text string) ([]int32, error) {
	if s.Tok == nil {
		if s.TokErr != nil {
			return nil, fmt.Errorf("input text: %w: %v; give ids instead (input ids 1,2,3)", client.ErrNoTokenizer, s.TokErr)
		}
		return nil, fmt.Errorf("input text: %w; give ids instead (input ids 1,2,3)", client.ErrNoTokenizer)
	}
	ids, err := s.Tok.Encode(text)
	if err != nil {
		return nil, fmt.Errorf("input text %q: %w", text, err)
	}
	if b := s.Tok.BOS(); b >= 0 {
		ids = append([]int32{b}, ids...)
	}
	return ids, nil
}

// Decode returns the text of ids, or "" without a tokenizer.
func (s *Session) Decode(ids []int32) string {
	if s.Tok == nil {
		return ""
	}
	return s.Tok.Decode(ids)
}

// ReadJSONL reads a batch from a JSON-lines file: one object per line with
// either "text" (encoded as Encode does) or "input_ids" (a list of ints);
// blank lines are skipped. Errors name the file and line.
func (s *Session) ReadJSONL(path string) ([][]int32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("input file: %w", err)
	}
	defer f.Close()
	var out [][]int32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec struct {
			Text     *string  `json:"text"`
			InputIDs *[]int32 `json:"input_ids"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch {
		case rec.InputIDs != nil && rec.Text != nil:
			return nil, fmt.Errorf("%s:%d: both \"text\" and \"input_ids\"; give one", path, n)
		case rec.InputIDs != nil:
			out = append(out, *rec.InputIDs)
		case rec.Text != nil:
			ids, err := s.Encode(*rec.Text)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			out = append(out, ids)
		default:
			return nil, fmt.Errorf("%s:%d: want {\"text\": ...} or {\"input_ids\": [...]}", path, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no sequences", path)
	}
	return out, nil
}
