package debug

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/quote"
	"hsdb/engine/regfile"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
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

// Encode returns the tokenizer's ids of text after the BOS its reference
// adds to a text (tokenizer.TextBOS: llama2.c's run.c and vLLM's default
// for Llama tokenizers prepend BOS; Kimi's tiktoken adds none) and before
// the EOS it appends (tokenizer.TextEOS: HF's add_eos_token). Errors:
// ErrNoTokenizer, a text too long for max_position_embeddings tokens
// (capture.Limits.EncodeText: refused from its bytes before tokenizing
// it, or once its ids pass the bound), or the tokenizer's own.
func (s *Session) Encode(text string) ([]int32, error) {
	if s.Tok == nil {
		if s.TokErr != nil {
			return nil, fmt.Errorf("input text: %w: %v; give ids instead (input ids 1,2,3)", client.ErrNoTokenizer, s.TokErr)
		}
		return nil, fmt.Errorf("input text: %w; give ids instead (input ids 1,2,3)", client.ErrNoTokenizer)
	}
	ids, why, err := capture.LimitsOf(s.E.Dims).EncodeText(s.Tok, text)
	if why != "" {
		return nil, fmt.Errorf("input text: %s", why)
	}
	if err != nil {
		return nil, fmt.Errorf("input text %s: %w", clipText(text), err)
	}
	return ids, nil
}

// clipText quotes text for an error message, its first 64 bytes and its
// size when longer (quote.Clip; an `input text` line may hold 16 MiB).
func clipText(text string) string { return quote.Clip(text, 64) }

// Decode returns the text of ids, or "" without a tokenizer.
func (s *Session) Decode(ids []int32) string {
	if s.Tok == nil {
		return ""
	}
	return s.Tok.Decode(ids)
}

// MaxBatchFileBytes bounds the JSON-lines file `input file` reads: the
// batch is held whole for one forward pass, and 256 MiB of JSON is tens of
// millions of tokens (ids of at most 7 digits and a comma), far past what
// one pass of the debugger takes.
const MaxBatchFileBytes = 256 << 20

// ReadJSONL reads a batch from a JSON-lines file: one object per line with
// either "text" (encoded as Encode does) or "input_ids" (a list of ints);
// blank lines and a UTF-8 byte order mark before the first are skipped,
// as `hsdb capture --data` skips them. A row's loss_mask is not kept (the batch is
// token ids alone): the notes say how many rows had one. Errors name the
// file and line, and the record's fault in JSON's terms
// (parseJSONLRecord); a line over 64 MiB is refused, and so are, before
// anything is read, a path that is not a regular file (a named pipe,
// /dev/zero) and a file over MaxBatchFileBytes (regfile.OpenBounded).
func (s *Session) ReadJSONL(path string) ([][]int32, []string, error) {
	f, err := regfile.OpenBounded(path, MaxBatchFileBytes)
	if errors.Is(err, regfile.ErrTooLarge) {
		return nil, nil, fmt.Errorf("input file: %w: the batch is held whole for one forward pass; `hsdb capture --data` streams larger inputs", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("input file: %w", err)
	}
	defer f.Close()
	const maxLine = 64 << 20
	var out [][]int32
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxLine)
	n, masked := 1, 0
	textMasked := 0 // the first line of a text row with a loss_mask, which capture refuses
	for ; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			// A UTF-8 byte order mark (RFC 8259 §8.1 lets a parser
			// ignore it), as `hsdb capture --data` ignores it: the same
			// file was refused here as "invalid character 'ï'".
			line = strings.TrimPrefix(line, "\ufeff")
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rec, text, ids, err := parseJSONLRecord([]byte(line))
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if m, ok := rec["loss_mask"]; ok && jsonKind(m) != "null" {
			masked++
			if text != nil && textMasked == 0 {
				textMasked = n
			}
		}
		if text != nil {
			if ids, err = s.Encode(*text); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
		}
		out = append(out, ids)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, nil, fmt.Errorf("%s:%d: line longer than %d MiB", path, n, maxLine>>20)
	}
	if err := sc.Err(); errors.Is(err, regfile.ErrTooLarge) { // it grew past the bound while read
		return nil, nil, fmt.Errorf("input file: %w", err)
	} else if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no sequences", path)
	}
	var notes []string
	if masked > 0 {
		capture := fmt.Sprintf("`hsdb capture --data %s` keeps it", path)
		if textMasked > 0 { // as capture.ReadInputs refuses it
			capture = fmt.Sprintf("`hsdb capture --data %s` keeps an input_ids row's and refuses one on a text row (line %d: a text's tokens are not known in advance; give input_ids)", path, textMasked)
		}
		notes = append(notes, fmt.Sprintf("%s: the loss_mask of %s is not kept: the debugger's batch is token ids, and `dump` writes no loss_mask (SpecForge's: all ones); %s", path, plural.N(masked, "row"), capture))
	}
	return out, notes, nil
}

// jsonKind names the JSON type of raw (its first byte), for messages.
func jsonKind(raw json.RawMessage) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "boolean"
	case b[0] == 'n':
		return "null"
	}
	return "number"
}

// parseJSONLRecord reads one `input file` record: {"text": "..."} (text
// set) or {"input_ids": [ids]} (ids set: non-negative integers that fit
// int32, at least one). A null field counts as absent. Errors say what the
// record holds in JSON's terms (an array where an object belongs, a token
// id that is 1.5 or "2"), never Go's types; a field given twice or in
// other case is refused as `hsdb capture --data` refuses it
// (capture.RowKeyFault). It returns the record's fields too.
func parseJSONLRecord(line []byte) (map[string]json.RawMessage, *string, []int32, error) {
	const want = `want a JSON object {"text": ...} or {"input_ids": [...]}`
	if err := capture.RowTextFault(line); err != nil { // as `hsdb capture --data` refuses it
		return nil, nil, nil, err
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(line, &rec); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, nil, fmt.Errorf("%s, got a JSON %s", want, jsonKind(line))
		}
		return nil, nil, nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if err := capture.RowKeyFault(line); err != nil {
		return nil, nil, nil, err
	}
	textRaw, hasText := rec["text"]
	idsRaw, hasIDs := rec["input_ids"]
	hasText = hasText && jsonKind(textRaw) != "null"
	hasIDs = hasIDs && jsonKind(idsRaw) != "null"
	switch {
	case hasText && hasIDs:
		return nil, nil, nil, fmt.Errorf(`both "text" and "input_ids"; give one`)
	case hasText:
		var text string
		if err := json.Unmarshal(textRaw, &text); err != nil {
			return nil, nil, nil, fmt.Errorf(`"text" is a JSON %s, want a string`, jsonKind(textRaw))
		}
		return rec, &text, nil, nil
	case hasIDs:
		var items []json.RawMessage
		if err := json.Unmarshal(idsRaw, &items); err != nil {
			return nil, nil, nil, fmt.Errorf(`"input_ids" is a JSON %s, want a list of token ids`, jsonKind(idsRaw))
		}
		if len(items) == 0 {
			return nil, nil, nil, fmt.Errorf("input_ids is empty")
		}
		ids := make([]int32, len(items))
		for i, it := range items {
			v, err := strconv.ParseInt(string(bytes.TrimSpace(it)), 10, 32)
			if err != nil || v < 0 {
				return nil, nil, nil, fmt.Errorf("input_ids[%d] is %s, not a token id (a non-negative integer)", i, bytes.TrimSpace(it))
			}
			ids[i] = int32(v)
		}
		return rec, nil, ids, nil
	}
	if h := capture.ChatRowHint(line); h != "" { // SpecForge's "conversations", OpenAI's "messages"
		return nil, nil, nil, fmt.Errorf(`want {"text": ...} or {"input_ids": [...]}; %s`, h)
	}
	return nil, nil, nil, fmt.Errorf(`want {"text": ...} or {"input_ids": [...]}`)
}
