package capture

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"hsdb/engine/jsonerr"
	"hsdb/engine/tokenizer"
)

// InputSeq is one sequence of a batch job's input: an id for the manifest,
// its token ids and optionally a loss mask (0/1 per token, as EAGLE-3
// trainers read it).
type InputSeq struct {
	ID       string
	IDs      []int32
	LossMask []int64
}

// Inputs is a batch job's input with the JobInfo that identifies it.
type Inputs struct {
	Seqs []InputSeq
	Job  JobInfo
}

// ParseIDsList reads --ids "1,2,3;4,5": sequences separated by ';', ids by
// ',' or spaces. Sequence ids are their indices. Each sequence is checked
// against lim (length, token ids). Errors name the sequence and the
// offending token or limit.
func ParseIDsList(s string, lim Limits) (*Inputs, error) {
	in := &Inputs{}
	for i, part := range strings.Split(s, ";") {
		var ids []int32
		for _, f := range strings.FieldsFunc(part, func(r rune) bool { return r == ',' || r == ' ' }) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("--ids: sequence %d: token id %q is not a non-negative integer", i, f)
			}
			ids = append(ids, int32(v))
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("--ids: sequence %d is empty", i)
		}
		if why := lim.check(ids); why != "" {
			return nil, fmt.Errorf("--ids: sequence %d: %s", i, why)
		}
		in.Seqs = append(in.Seqs, InputSeq{ID: strconv.Itoa(i), IDs: ids})
	}
	h := sha256.Sum256([]byte(s))
	in.Job = JobInfo{InputSHA256: hex.EncodeToString(h[:]), Input: "--ids", Sequences: len(in.Seqs)}
	return in, nil
}

// jsonlRow is one line of a JSONL input.
type jsonlRow struct {
	ID       json.RawMessage `json:"id"`
	InputIDs []int64         `json:"input_ids"`
	LossMask []int64         `json:"loss_mask"`
	Text     *string         `json:"text"`
}

// ReadJSONL reads a batch job's input file, one JSON object per line
// (blank lines skipped): {"input_ids": [...], "loss_mask": [...]} with an
// optional "loss_mask" of 0/1 per token, or {"text": "..."} encoded with
// tok after its BOS (as `hsdb generate --prompt` does); an optional "id"
// (string or number) names the sequence in the manifest, else its line
// index among the sequences. Errors name the file and line: bad JSON,
// neither input_ids nor text, a negative id, a loss_mask of another length
// or with values other than 0 and 1, text without a tokenizer, and a row
// over lim (more tokens than max_position_embeddings, an id outside the
// vocabulary) — all found while reading, before any forward pass.
func ReadJSONL(path string, tok tokenizer.Tokenizer, lim Limits) (*Inputs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	in := &Inputs{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		var r jsonlRow
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: %w", where, jsonerr.Explain(err))
		}
		s := InputSeq{ID: strconv.Itoa(len(in.Seqs))}
		if len(r.ID) > 0 && string(r.ID) != "null" {
			var str string
			if json.Unmarshal(r.ID, &str) == nil {
				s.ID = str
			} else {
				s.ID = string(r.ID)
			}
		}
		switch {
		case r.InputIDs != nil:
			for j, v := range r.InputIDs {
				if v < 0 || v > 1<<31-1 {
					return nil, fmt.Errorf("%s: input_ids[%d] = %d is not a token id", where, j, v)
				}
				s.IDs = append(s.IDs, int32(v))
			}
		case r.Text != nil:
			if tok == nil {
				return nil, fmt.Errorf("%s: a \"text\" row needs the model's tokenizer, which was not found", where)
			}
			if tok.BOS() >= 0 {
				s.IDs = append(s.IDs, tok.BOS())
			}
			ids, err := tok.Encode(*r.Text)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			s.IDs = append(s.IDs, ids...)
		default:
			return nil, fmt.Errorf("%s: a row needs \"input_ids\" or \"text\"", where)
		}
		if len(s.IDs) == 0 {
			return nil, fmt.Errorf("%s: the sequence is empty", where)
		}
		if why := lim.check(s.IDs); why != "" {
			return nil, fmt.Errorf("%s (sequence %d, id %q): %s", where, len(in.Seqs), s.ID, why)
		}
		if r.LossMask != nil {
			if r.InputIDs == nil {
				return nil, fmt.Errorf("%s: loss_mask needs input_ids (a text row's tokens are not known in advance)", where)
			}
			if len(r.LossMask) != len(s.IDs) {
				return nil, fmt.Errorf("%s: loss_mask has %d values for %d input_ids", where, len(r.LossMask), len(s.IDs))
			}
			for j, v := range r.LossMask {
				if v != 0 && v != 1 {
					return nil, fmt.Errorf("%s: loss_mask[%d] = %d, want 0 or 1", where, j, v)
				}
			}
			s.LossMask = r.LossMask
		}
		in.Seqs = append(in.Seqs, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(in.Seqs) == 0 {
		return nil, fmt.Errorf("%s: no sequences", path)
	}
	seen := map[string]int{}
	for i, s := range in.Seqs {
		if j, dup := seen[s.ID]; dup {
			return nil, fmt.Errorf("%s: sequences %d and %d share the id %q", path, j, i, s.ID)
		}
		seen[s.ID] = i
	}
	h := sha256.Sum256(data)
	in.Job = JobInfo{InputSHA256: hex.EncodeToString(h[:]), Input: path, Sequences: len(in.Seqs)}
	return in, nil
}
