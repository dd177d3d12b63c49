package tokenizer

import (
	"encoding/binary"
	"fmt"
	"hsdb/engine/regfile"
	"math"
	"path/filepath"
)

// Llama2C is the tokenizer of karpathy/llama2.c (`tokenizer.bin`, e.g.
// stories260K's tok512.bin): SentencePiece BPE pieces with their scores,
// encoded and decoded exactly as run.c's encode() and decode() do.
//
// Id conventions (fixed by run.c): 0 <unk>, 1 BOS <s>, 2 EOS </s>, and
// 3..258 the byte-fallback pieces "<0x00>".."<0xFF>" (id = byte + 3).
type Llama2C struct {
	name   string
	pieces []string  // [vocab] piece bytes, "▁" already replaced by ' '
	scores []float32 // [vocab] merge priority; larger merges first
	lookup map[string]int32
	// maxTokenLength is the header value; no piece is longer.
	maxTokenLength int
	space          int32 // id of the piece " " (run.c's dummy prefix), or -1
}

// Fixed ids of the llama2.c format.
const (
	llama2cBOS       = 1
	llama2cEOS       = 2
	llama2cByteStart = 3 // id of "<0x00>"
	// llama2cMinScore is run.c's initial best_score (float -1e10).
	llama2cMinScore = float32(-1e10)
)

// LoadLlama2C reads a llama2.c tokenizer file: a little-endian int32
// max_token_length, then for every token until the end of the file an f32
// score, an int32 byte length and that many bytes (the layout llama2.c's
// tokenizer.py export() writes and run.c build_tokenizer() reads; the file
// does not store the vocabulary size, which run.c takes from the model).
//
// It returns an error wrapping ErrFormat, naming the file and the token
// index, when the file is truncated (a record cut short), a length is
// negative or runs past the end of the file, a piece is longer than
// max_token_length, the fixed ids are missing (fewer than 259 tokens, or
// tokens 3..258 are not "<0x00>".."<0xFF>"), since run.c's byte fallback
// (id = byte + 3) would then silently produce wrong ids, or the file holds
// more than MaxTokenID + 1 tokens.
func LoadLlama2C(path string) (*Llama2C, error) {
	data, err := regfile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("llama2.c tokenizer: %w", err)
	}
	t, err := parseLlama2C(data, filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("llama2.c tokenizer %s: %w", path, err)
	}
	return t, nil
}

// maxLlama2CTokens is the most tokens a llama2.c tokenizer file may hold,
// MaxTokenID + 1 (a test lowers it).
var maxLlama2CTokens = MaxTokenID + 1

func parseLlama2C(data []byte, base string) (*Llama2C, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, want at least the 4-byte max_token_length header", ErrFormat, len(data))
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen <= 0 {
		return nil, fmt.Errorf("%w: max_token_length %d, want > 0", ErrFormat, maxLen)
	}
	t := &Llama2C{name: "llama2c:" + base, maxTokenLength: int(maxLen), lookup: map[string]int32{}, space: -1}
	off := 4
	for i := 0; off < len(data); i++ {
		if len(data)-off < 8 {
			return nil, fmt.Errorf("%w: token %d at byte %d: %d bytes left, want 8 (f32 score, int32 length)", ErrFormat, i, off, len(data)-off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int64(int32(binary.LittleEndian.Uint32(data[off+4:])))
		off += 8
		if n < 0 {
			return nil, fmt.Errorf("%w: token %d at byte %d: negative length %d", ErrFormat, i, off-4, n)
		}
		if n > int64(len(data)-off) {
			return nil, fmt.Errorf("%w: token %d at byte %d: length %d runs past the end of the file (%d bytes left)", ErrFormat, i, off-4, n, len(data)-off)
		}
		if n > int64(maxLen) {
			return nil, fmt.Errorf("%w: token %d: length %d exceeds max_token_length %d", ErrFormat, i, n, maxLen)
		}
		piece := string(data[off : off+int(n)])
		off += int(n)
		if i >= maxLlama2CTokens {
			return nil, fmt.Errorf("%w: more than %d tokens (MaxTokenID + 1; token %d at byte %d)", ErrFormat, maxLlama2CTokens, i, off-int(n)-8)
		}
		if b := i - llama2cByteStart; b >= 0 && b < 256 {
			// Checked as read: a file of 480 MB of empty tokens was held
			// whole (3.9 GB, 50 s) before token 3 was looked at.
			if want := fmt.Sprintf("<0x%02X>", b); piece != want {
				return nil, fmt.Errorf("%w: token %d is %s, want byte-fallback piece %q", ErrFormat, i, quoteClip(piece), want)
			}
		}
		id := int32(len(t.pieces))
		t.pieces = append(t.pieces, piece)
		t.scores = append(t.scores, score)
		// run.c finds pieces by bsearch over the sorted vocabulary, which
		// returns an arbitrary one of equal strings; keep the first id.
		if _, dup := t.lookup[piece]; !dup {
			t.lookup[piece] = id
		}
	}
	if len(t.pieces) < llama2cByteStart+256 {
		return nil, fmt.Errorf("%w: %d tokens, want at least 259 (<unk>, <s>, </s>, 256 byte pieces)", ErrFormat, len(t.pieces))
	}
	if id, ok := t.lookup[" "]; ok {
		t.space = id
	}
	return t, nil
}

// Name returns "llama2c:" and the file's base name.
func (t *Llama2C) Name() string { return t.name }

// VocabSize is the number of tokens in the file (512 for tok512.bin).
func (t *Llama2C) VocabSize() int { return len(t.pieces) }

// BOS is 1, as run.c hard-codes.
func (t *Llama2C) BOS() int32 { return llama2cBOS }

// EOS is 2, as run.c hard-codes.
func (t *Llama2C) EOS() int32 { return llama2cEOS }

// Piece returns the stored bytes of token id (SentencePiece's "▁" already
// exported as ' '; BOS is "\n<s>\n" and EOS "\n</s>\n" as tokenizer.py
// writes them), or "" when id is out of range.
func (t *Llama2C) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Score returns the merge score of token id (0 when out of range).
func (t *Llama2C) Score(id int32) float32 {
	if id < 0 || int(id) >= len(t.scores) {
		return 0
	}
	return t.scores[id]
}

// Encode tokenizes text as llama2.c run.c encode(t, text, 0, 0, ...):
//
//  1. when text is non-empty, the dummy-prefix piece " " comes first
//     (SentencePiece's add_dummy_prefix);
//  2. text is cut into UTF-8 code points as run.c does (a lead or ASCII byte
//     followed by at most 3 continuation bytes); a code point that is a
//     piece becomes its id, otherwise each of its bytes becomes id byte+3;
//  3. repeatedly, the adjacent pair whose concatenated piece strings form a
//     piece with the highest score is merged, the leftmost pair winning
//     ties, until no adjacent pair forms a piece.
//
// Unlike SentencePiece proper, whitespace is not normalized (no stripping,
// no collapsing of runs of spaces). Unlike run.c, which reads a C string,
// a NUL byte does not end the text: it is encoded as the byte piece <0x00>.
// The result is the same as run.c's O(n²) pair scan; merges use a heap keyed
// by (score, position), so Encode is O(n log n). It never returns an error.
func (t *Llama2C) Encode(text string) ([]int32, error) {
	if text == "" {
		return []int32{}, nil
	}
	ids := make([]int32, 0, len(text)+1)
	if t.space >= 0 {
		ids = append(ids, t.space)
	} else {
		// run.c would store the -1 of a failed lookup; a vocabulary without
		// " " gets the byte piece of ' ' instead, as SentencePiece's byte
		// fallback would produce.
		ids = append(ids, llama2cByteStart+' ')
	}
	for i := 0; i < len(text); {
		// One run.c code point: this byte plus the continuation bytes that
		// follow it, at most 4 bytes in all.
		j := i + 1
		for j < len(text) && text[j]&0xC0 == 0x80 && j-i < 4 {
			j++
		}
		if id, ok := t.lookup[text[i:j]]; ok {
			ids = append(ids, id)
		} else {
			for k := i; k < j; k++ {
				ids = append(ids, llama2cByteStart+int32(text[k]))
			}
		}
		i = j
	}
	return t.merge(ids), nil
}

// merge applies run.c's greedy highest-score merges to ids in place.
func (t *Llama2C) merge(ids []int32) []int32 {
	if len(ids) < 2 {
		return ids
	}
	syms := newSyms(ids)
	var buf []byte
	mergePairs(syms, func(left, right int32) (int32, float64, bool) {
		buf = append(append(buf[:0], t.pieces[left]...), t.pieces[right]...)
		id, ok := t.lookup[string(buf)] // no allocation for a map key conversion
		// run.c starts its search at best_score = -1e10 and compares with
		// '>', so pieces scored at or below that (or NaN) never merge.
		if !ok || !(t.scores[id] > llama2cMinScore) {
			return 0, 0, false
		}
		return id, -float64(t.scores[id]), true
	})
	return liveIDs(syms, ids[:0])
}

// DecodePiece is run.c decode(prev, id): the piece of id, with one leading
// space removed when prev is BOS (SentencePiece strips the dummy prefix, see
// llama2.c PR #89), and a "<0xXX>" piece replaced by the raw byte 0xXX. BOS
// and EOS return their stored pieces as run.c does; an id out of range
// returns "".
func (t *Llama2C) DecodePiece(prev, id int32) string {
	p := t.Piece(id)
	if prev == llama2cBOS && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
	}
	if b, ok := hexBytePiece(p); ok {
		return string([]byte{b})
	}
	return p
}

// Decode concatenates DecodePiece(prev, id) over ids as run.c's generation
// loop prints them, the first id being treated as following BOS (run.c
// always starts from BOS, so the dummy-prefix space of the first word is
// dropped). BOS and EOS themselves print nothing, as in SentencePiece's
// decoder (run.c stops at BOS and has no EOS case). Raw bytes are kept as
// they are, including invalid UTF-8; run.c's safe_printf, which drops
// non-printable single bytes on the terminal, is not applied.
func (t *Llama2C) Decode(ids []int32) string {
	var out []byte
	prev := int32(llama2cBOS)
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.pieces) {
			continue
		}
		if id == llama2cBOS || id == llama2cEOS {
			prev = id
			continue
		}
		out = append(out, t.DecodePiece(prev, id)...)
		prev = id
	}
	return string(out)
}

// hexBytePiece parses a byte-fallback piece "<0xXX>" (upper- or lower-case
// hex, as run.c's sscanf "%02hhX" accepts) and returns its byte.
func hexBytePiece(p string) (byte, bool) {
	if len(p) != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(p[3])
	lo, ok2 := hexDigit(p[4])
	if !ok1 || !ok2 {
		return 0, false
	}
	return hi<<4 | lo, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// ParseLlama2C reads a llama2.c tokenizer from memory (an embedded model's
// tokenizer.bin); name stands for the file in messages. Errors as
// LoadLlama2C.
func ParseLlama2C(data []byte, name string) (*Llama2C, error) {
	t, err := parseLlama2C(data, name)
	if err != nil {
		return nil, fmt.Errorf("llama2.c tokenizer %s: %w", name, err)
	}
	return t, nil
}
