package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// Inputs is a batch job's input with the JobInfo that identifies it:
// either held (Seqs: ParseIDsList) or, from OpenJSONL, a
// validated file read row by row as the job runs (Seqs nil; Len and Rows
// read both kinds).
type Inputs struct {
	Seqs []InputSeq
	Job  JobInfo
	// Masked counts the rows that carry a loss_mask (OpenJSONL's
	// validating pass).
	Masked int
	file   *jsonlFile
}

// ParseIDsList reads --ids "1,2,3;4,5": sequences separated by ';', ids by
// ',' or spaces. Sequence ids are their indices. Each sequence is checked
// against lim (length, token ids). Errors name the sequence and the
// offending token or limit.
func ParseIDsList(s string, lim Limits) (*Inputs, error) {
	in := &Inputs{}
	for i, part := range strings.Split(s, ";") {
		var ids []int32
		if strings.TrimSpace(part) == "" {
			return nil, fmt.Errorf("--ids: sequence %d is empty", i)
		}
		fields, err := SplitIDs(part)
		if err != nil {
			return nil, fmt.Errorf("--ids: sequence %d: %w", i, err)
		}
		for _, f := range fields {
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

// SplitIDs splits a token id list ("1,2,3", "1 2 3" or "1, 2 3") into its
// items: commas or spaces separate them; an empty item between commas
// ("1,,2", a leading or trailing comma) is an error naming it, never
// dropped (it would give another sequence than the one typed). The list
// may be written in brackets, as hsdb prints a sequence ("[1, 403, 407]",
// also JSON's and Python's list). The items are not parsed.
func SplitIDs(s string) ([]string, error) {
	var out []string
	list := strings.TrimSpace(s)
	if strings.HasPrefix(list, "[") && strings.HasSuffix(list, "]") {
		list = list[1 : len(list)-1]
	}
	for i, item := range strings.Split(list, ",") {
		f := strings.Fields(item)
		if len(f) == 0 {
			return nil, fmt.Errorf("ids %q: item %d is empty", s, i+1)
		}
		out = append(out, f...)
	}
	return out, nil
}

// jsonlRow is one line of a JSONL input.
type jsonlRow struct {
	ID       json.RawMessage `json:"id"`
	InputIDs rowIDs          `json:"input_ids"`
	LossMask rowIDs          `json:"loss_mask"`
	Text     *string         `json:"text"`
}

// chatKey returns the key of row (a JSON object) that holds a chat in the
// EAGLE-3 trainers' data sets ("conversations": ShareGPT's, as SpecForge
// reads it; "messages": OpenAI's), or "".
func chatKey(row []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(row, &m) != nil {
		return ""
	}
	for _, k := range []string{"conversations", "messages"} {
		if _, ok := m[k]; ok {
			return k
		}
	}
	return ""
}

// ChatRowHint says, for a JSON-lines row holding a chat (chatKey) and no
// "input_ids" or "text", that hsdb does not render chats and what to give
// instead: `its "conversations" is a chat, which hsdb does not render:
// ... give "input_ids"`; "" for another row. `hsdb capture --data` and
// the debugger's `input file` add it to their refusals.
func ChatRowHint(row []byte) string {
	k := chatKey(row)
	if k == "" {
		return ""
	}
	return fmt.Sprintf("its %q is a chat, which hsdb does not render: apply the model's chat template first (as SpecForge's and speculators' data preparation do) and give \"input_ids\"", k)
}

// ErrNoTokenizer is wrapped by a --data row of "text" read without a
// tokenizer (the model has none hsdb can use); the caller adds why.
var ErrNoTokenizer = errors.New("needs the model's tokenizer, and it has none")

// parseRow reads one non-blank line of a JSONL input (OpenJSONL's row
// format) as sequence number index; where ("file:line") prefixes errors.
func parseRow(b []byte, where string, index int, tok tokenizer.Tokenizer, lim Limits) (InputSeq, error) {
	if err := RowTextFault(b); err != nil {
		return InputSeq{}, fmt.Errorf("%s: %w", where, err)
	}
	r := jsonlRow{InputIDs: rowIDs{max: lim.MaxPositions}, LossMask: rowIDs{max: lim.MaxPositions}}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return InputSeq{}, fmt.Errorf("%s: %w", where, jsonerr.Explain(err))
	}
	// One object per line: a second value after it (two rows joined on a
	// line) was dropped without a word.
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return InputSeq{}, fmt.Errorf("%s: %q follows the row's JSON object at byte %d: one object per line", where, clipBytes(rest, 40), dec.InputOffset())
	}
	if err := RowKeyFault(b); err != nil {
		return InputSeq{}, fmt.Errorf("%s: %w", where, err)
	}
	if (r.InputIDs.ids != nil || r.InputIDs.over > 0) && r.Text != nil {
		return InputSeq{}, fmt.Errorf("%s: the row has both \"input_ids\" and \"text\": give one", where)
	}
	s := InputSeq{ID: strconv.Itoa(index)}
	if len(r.ID) > 0 && string(r.ID) != "null" {
		var str string
		var num json.Number
		switch {
		case json.Unmarshal(r.ID, &str) == nil:
			s.ID = str
		case json.Unmarshal(r.ID, &num) == nil:
			s.ID = string(r.ID)
		default: // an array, object or boolean names no sequence
			return InputSeq{}, fmt.Errorf("%s: \"id\" is %.40s: want a string or a number", where, r.ID)
		}
	}
	switch {
	case r.InputIDs.over > 0:
		return InputSeq{}, fmt.Errorf("%s (sequence %d, id %q): %d tokens, more than max_position_embeddings %d", where, index, s.ID, r.InputIDs.over, lim.MaxPositions)
	case r.InputIDs.ids != nil:
		s.IDs = make([]int32, 0, len(r.InputIDs.ids))
		for j, v := range r.InputIDs.ids {
			if v < 0 || v > 1<<31-1 {
				return InputSeq{}, fmt.Errorf("%s: input_ids[%d] = %d is not a token id", where, j, v)
			}
			s.IDs = append(s.IDs, int32(v))
		}
	case r.Text != nil:
		if tok == nil {
			return InputSeq{}, fmt.Errorf("%s: a \"text\" row %w", where, ErrNoTokenizer)
		}
		ids, why, err := lim.EncodeText(tok, *r.Text)
		if why != "" {
			return InputSeq{}, fmt.Errorf("%s (sequence %d, id %q): %s", where, index, s.ID, why)
		}
		if err != nil {
			return InputSeq{}, fmt.Errorf("%s: %w", where, err)
		}
		s.IDs = ids
	default:
		if h := ChatRowHint(b); h != "" {
			return InputSeq{}, fmt.Errorf("%s: a row needs \"input_ids\" or \"text\"; %s, with a \"loss_mask\" of 1 on the assistant's tokens", where, h)
		}
		return InputSeq{}, fmt.Errorf("%s: a row needs \"input_ids\" or \"text\"", where)
	}
	if len(s.IDs) == 0 {
		return InputSeq{}, fmt.Errorf("%s: the sequence is empty", where)
	}
	if why := lim.check(s.IDs); why != "" {
		return InputSeq{}, fmt.Errorf("%s (sequence %d, id %q): %s", where, index, s.ID, why)
	}
	if r.LossMask.ids != nil || r.LossMask.over > 0 {
		if r.InputIDs.ids == nil {
			return InputSeq{}, fmt.Errorf("%s: loss_mask needs input_ids (a text row's tokens are not known in advance)", where)
		}
		if r.LossMask.over > 0 { // counted, not read: more than any row may hold
			return InputSeq{}, fmt.Errorf("%s: loss_mask has %d values for %d input_ids", where, r.LossMask.over, len(s.IDs))
		}
		if len(r.LossMask.ids) != len(s.IDs) {
			return InputSeq{}, fmt.Errorf("%s: loss_mask has %d values for %d input_ids", where, len(r.LossMask.ids), len(s.IDs))
		}
		for j, v := range r.LossMask.ids {
			if v != 0 && v != 1 {
				return InputSeq{}, fmt.Errorf("%s: loss_mask[%d] = %d, want 0 or 1", where, j, v)
			}
		}
		s.LossMask = r.LossMask.ids
	}
	return s, nil
}
