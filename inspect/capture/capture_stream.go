package capture

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"hsdb/engine/regfile"
	"hsdb/engine/tokenizer"
)

// MaxLineBytes is the longest line a JSONL input may hold (1 GiB): a row
// is read whole, so this bounds what one row costs in memory; a longer
// line is an error naming the file and line.
const MaxLineBytes = 1 << 30

// maxLineBytes is MaxLineBytes, lowered by a test.
var maxLineBytes = MaxLineBytes

// jsonlFile is an OpenJSONL input: the file, how its rows are read, the
// limits every row was validated against and what the validating pass
// found (sequences, sha256), which a later read must find again.
type jsonlFile struct {
	path string
	tok  tokenizer.Tokenizer
	lim  Limits
	n    int
	sha  string
}

// OpenJSONL validates a batch job's input file in one streaming pass and
// returns Inputs that read its rows again, one at a time, as the job runs
// (Rows): memory is bounded by one row (at most MaxLineBytes) and the
// duplicate-id check's buffer (6 MiB; longer files spill sorted runs of id
// digests to a temporary file: capture_ids.go), not by the file. A line is
// one JSON object (blank lines skipped): {"input_ids": [...],
// "loss_mask": [...]} with an optional "loss_mask" of 0/1 per token, or
// {"text": "..."} encoded with tok after the BOS its reference adds to a
// text (tokenizer.TextBOS, as `hsdb generate --prompt` does) and before
// the EOS it appends (tokenizer.TextEOS: add_eos_token); an optional "id" (string or number) names the sequence
// in the manifest, else its index among the sequences. Errors name the
// file and line: bad JSON, anything after a row's object on its line, a
// field given twice or in other case (RowKeyFault), both
// input_ids and text or neither, a negative id, a
// loss_mask of another length or with values other than 0 and 1, text
// without a tokenizer, a line over MaxLineBytes, two rows with one id, and
// a row over lim (more tokens than max_position_embeddings, a text longer
// than MaxTextBytesPerToken bytes per position, an id outside
// the vocabulary) — all found in this pass, before any forward pass.
func OpenJSONL(path string, tok tokenizer.Tokenizer, lim Limits) (*Inputs, error) {
	f := &jsonlFile{path: path, tok: tok, lim: lim, n: -1}
	in := &Inputs{file: f}
	r, err := in.Rows()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var ids idCheck // bounded: one id per row would grow with the file
	defer ids.close()
	for {
		i, s, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A repeated id before the bad row is the earlier error.
			if derr := ids.firstDuplicate(in, path, r.index); derr != nil {
				return nil, derr
			}
			return nil, err
		}
		if err := ids.add(s.ID, i); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if s.LossMask != nil {
			in.Masked++
		}
	}
	if err := ids.firstDuplicate(in, path, r.index); err != nil {
		return nil, err
	}
	if r.index == 0 {
		return nil, fmt.Errorf("%s: no sequences", path)
	}
	f.n, f.sha = r.index, hex.EncodeToString(r.h.Sum(nil))
	in.Job = JobInfo{InputSHA256: f.sha, Input: path, Sequences: f.n}
	return in, nil
}

// Len is the number of input sequences.
func (in *Inputs) Len() int {
	if in.file != nil {
		return in.file.n
	}
	return len(in.Seqs)
}

// Rows returns a reader of the input's sequences in order: Seqs, or an
// OpenJSONL file read again row by row. Errors: the file's open error.
func (in *Inputs) Rows() (*RowReader, error) {
	if in.file == nil {
		return &RowReader{seqs: in.Seqs}, nil
	}
	fh, err := regfile.Open(in.file.path) // a named pipe or device is refused, not waited on or read without end
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	h := sha256.New()
	sc := bufio.NewScanner(io.TeeReader(fh, h))
	sc.Buffer(make([]byte, 0, min(64<<10, maxLineBytes)), maxLineBytes)
	return &RowReader{file: in.file, fh: fh, sc: sc, h: h}, nil
}

// utf8BOM is the UTF-8 byte order mark an editor (Notepad) may put at a
// file's start; RFC 8259 §8.1 lets a parser ignore it, and a row reader
// does on the first line (encoding/json would call it an invalid
// character 'ï').
var utf8BOM = []byte("\xef\xbb\xbf")

// RowReader reads an input's sequences one at a time; it holds one row.
type RowReader struct {
	seqs  []InputSeq
	file  *jsonlFile
	fh    *os.File
	sc    *bufio.Scanner
	h     hash.Hash
	line  int // lines read
	index int // sequences returned
}

// Next returns the next sequence and its index in the input, or io.EOF
// after the last. A file's row is parsed and checked against the limits it
// was opened with; errors name the file and line, and a file whose rows
// or sha256 differ from what OpenJSONL validated (changed since) is an
// error, not read as another input.
func (r *RowReader) Next() (int, InputSeq, error) {
	if r.file == nil {
		if r.index >= len(r.seqs) {
			return 0, InputSeq{}, io.EOF
		}
		r.index++
		return r.index - 1, r.seqs[r.index-1], nil
	}
	f := r.file
	for r.sc.Scan() {
		r.line++
		b := r.sc.Bytes()
		if r.line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		s, err := parseRow(b, fmt.Sprintf("%s:%d", f.path, r.line), r.index, f.tok, f.lim)
		if err != nil {
			return 0, InputSeq{}, r.changed(err)
		}
		r.index++
		return r.index - 1, s, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line longer than %d bytes (MaxLineBytes: one row is read whole)", maxLineBytes)
		}
		return 0, InputSeq{}, r.changed(fmt.Errorf("%s:%d: %w", f.path, r.line+1, err))
	}
	if f.n >= 0 {
		if sha := hex.EncodeToString(r.h.Sum(nil)); r.index != f.n || sha != f.sha {
			return 0, InputSeq{}, fmt.Errorf("%s changed while the job ran: %d sequences, sha256 %s; validated %d, sha256 %s", f.path, r.index, sha, f.n, f.sha)
		}
	}
	return 0, InputSeq{}, io.EOF
}

// changed marks an error of a re-read (not the validating pass) as the
// file having changed since it was validated.
func (r *RowReader) changed(err error) error {
	if r.file.n < 0 {
		return err
	}
	return fmt.Errorf("%w (the file changed after it was validated)", err)
}

// Close closes the file read, if any.
func (r *RowReader) Close() error {
	if r.fh == nil {
		return nil
	}
	return r.fh.Close()
}
