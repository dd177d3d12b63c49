package tokenizer

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	sentencepiece "github.com/eliben/go-sentencepiece"
	"hsdb/engine/regfile"
)

// SentencePiece is a SentencePiece BPE model (a `.model` protobuf such as
// stories260K's tok512.model or Llama-2's tokenizer.model). The BPE merges
// run in github.com/eliben/go-sentencepiece; this type adds the parts of
// SentencePiece's normalizer that the library leaves out (see Encode) and
// SentencePiece's decoder rules.
//
// Supported models: model_type BPE, normalization rule "identity" (no
// precompiled_charsmap), escape_whitespaces on, treat_whitespace_as_suffix
// off; add_dummy_prefix and remove_extra_whitespaces either way.
//
// Loaded by LoadSentencePieceDir beside a tokenizer_config.json, Encode,
// BOS, EOS, TextBOS and TextEOS follow HF transformers 5.17 instead (see
// there); Decode and DecodePiece keep sentencepiece's and run.c's rules in
// both cases (transformers' decoders differ on the leading space: its
// TokenizersBackend keeps it).
type SentencePiece struct {
	name  string
	proc  *sentencepiece.Processor
	spec  spSpec
	piece []spPiece // [vocab]
	// hf: transformers' conventions (LoadSentencePieceDir, with a
	// tokenizer_config.json), nil for sentencepiece's and llama2.c's.
	hf *spHF
}

type spPiece struct {
	text  string // as stored, with "▁" for spaces
	score float32
	typ   int32 // SentencePiece.Type: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
}

// SentencePiece.Type values (sentencepiece_model.proto).
const (
	spNormal      = 1
	spUnknown     = 2
	spControl     = 3
	spUserDefined = 4
	spUnused      = 5
	spByte        = 6
)

// LoadSentencePiece reads a SentencePiece model file. It returns an error
// wrapping ErrFormat (naming the file and, where it applies, the piece
// index) for a file that is not a valid model protobuf or whose bos/eos ids
// fall outside the vocabulary, and ErrUnsupported for a model this package
// cannot encode exactly like SentencePiece (see the type's doc).
func LoadSentencePiece(path string) (*SentencePiece, error) {
	data, err := regfile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("sentencepiece: %w", err)
	}
	t, err := parseSentencePiece(data, filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("sentencepiece %s: %w", path, err)
	}
	return t, nil
}

func parseSentencePiece(data []byte, base string) (*SentencePiece, error) {
	m, err := parseSPModel(data)
	if err != nil {
		return nil, err
	}
	s := m.spec
	switch {
	case s.modelType != spModelBPE:
		return nil, fmt.Errorf("%w: model_type %d, only BPE (2) is supported", ErrUnsupported, s.modelType)
	case len(s.charsmap) > 0:
		return nil, fmt.Errorf("%w: normalizer %s with a precompiled_charsmap (only the identity rule is supported)", ErrUnsupported, quoteClip(s.normName))
	case !s.escapeWhitespaces:
		return nil, fmt.Errorf("%w: escape_whitespaces=false", ErrUnsupported)
	case s.treatWSAsSuffix:
		return nil, fmt.Errorf("%w: treat_whitespace_as_suffix=true", ErrUnsupported)
	}
	if err := checkSPPieces(m.pieces, s.byteFallback); err != nil {
		return nil, err
	}
	for _, id := range []struct {
		name string
		v    int32
	}{{"unk_id", s.unkID}, {"bos_id", s.bosID}, {"eos_id", s.eosID}} {
		if id.v >= int32(len(m.pieces)) || (id.v < 0 && id.name == "unk_id") {
			return nil, fmt.Errorf("%w: %s %d outside the vocabulary of %d pieces", ErrFormat, id.name, id.v, len(m.pieces))
		}
	}
	// go-sentencepiece v0.7.0 dereferences add_dummy_prefix and
	// remove_extra_whitespaces without a nil check (a panic on models that
	// leave them at their defaults, like tok512.model) and refuses models
	// that set them. This type applies both itself, so hand the library a
	// copy whose normalizer_spec sets both to false: a second occurrence of
	// field 3 is merged into the first by protobuf decoding, and its scalar
	// values win.
	patched := append(append([]byte(nil), data...), spNormalizerOverride...)
	proc, err := newSPProcessor(patched)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return &SentencePiece{name: "sentencepiece:" + base, proc: proc, spec: s, piece: m.pieces}, nil
}

// newSPProcessor calls the library, turning a panic on a malformed model
// into an error.
func newSPProcessor(data []byte) (p *sentencepiece.Processor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-sentencepiece: %v", r)
		}
	}()
	return sentencepiece.NewProcessor(bytes.NewReader(data))
}

// Name returns "sentencepiece:" and the file's base name.
func (t *SentencePiece) Name() string { return t.name }

// VocabSize is the number of pieces in the model.
func (t *SentencePiece) VocabSize() int { return len(t.piece) }

// BOS is trainer_spec.bos_id (default 1; -1 when the model disables it),
// or under transformers' conventions (LoadSentencePieceDir) the piece of
// tokenizer_config.json's bos_token (-1 for null).
func (t *SentencePiece) BOS() int32 {
	if t.hf != nil {
		return t.hf.bos
	}
	return t.spec.bosID
}

// EOS is trainer_spec.eos_id (default 2; -1 when the model disables it),
// or under transformers' conventions the piece of eos_token (-1 for null).
func (t *SentencePiece) EOS() int32 {
	if t.hf != nil {
		return t.hf.eos
	}
	return t.spec.eosID
}

// TextBOS is the id a text's ids start with: BOS, as sentencepiece's
// users and llama2.c's run.c (encode with bos=1) put it, or under
// transformers' conventions (LoadSentencePieceDir) bos_token when
// tokenizer_config.json's add_bos_token is true and -1 otherwise.
func (t *SentencePiece) TextBOS() int32 {
	if t.hf != nil {
		return t.hf.textBOS
	}
	return t.spec.bosID
}

// TextEOS is the id a text's ids end with: -1 (run.c encodes a prompt
// with eos=0), or under transformers' conventions eos_token when
// add_eos_token is true.
func (t *SentencePiece) TextEOS() int32 {
	if t.hf != nil {
		return t.hf.textEOS
	}
	return -1
}

// Encode returns SentencePiece's ids for text, as sp.encode(text) does.
// It first applies SentencePiece's normalizer (normalizer.cc) for the
// identity rule: each byte of malformed UTF-8 becomes U+FFFD; with
// remove_extra_whitespaces, leading spaces are dropped and runs of spaces
// collapse to one (only U+0020 counts as a space), and an empty result gives
// no ids; with add_dummy_prefix, a space is prepended; with
// remove_extra_whitespaces again, trailing spaces and trailing literal "▁"
// (U+2581, which SentencePiece cannot tell from an escaped space) are
// dropped. Spaces become
// "▁" and the library runs the BPE merges (highest score first, leftmost on
// ties) with byte fallback for pieces missing from the vocabulary. It never
// returns an error. Under transformers' conventions (LoadSentencePieceDir)
// it returns transformers' tok(text, add_special_tokens=False).input_ids
// instead (encodeHF), an error for invalid UTF-8.
func (t *SentencePiece) Encode(text string) ([]int32, error) {
	if t.hf != nil {
		return t.encodeHF(text)
	}
	norm := t.normalize(text)
	if norm == "" {
		return []int32{}, nil
	}
	toks := t.proc.Encode(norm)
	ids := make([]int32, len(toks))
	for i, tk := range toks {
		ids[i] = int32(tk.ID)
	}
	return ids, nil
}

// normalize applies the identity-rule parts of SentencePiece's Normalizer
// that go-sentencepiece omits; spaces stay ' ' (the library escapes them).
func (t *SentencePiece) normalize(text string) string {
	if !utf8.ValidString(text) {
		var sb strings.Builder
		for i := 0; i < len(text); {
			r, n := utf8.DecodeRuneInString(text[i:])
			sb.WriteRune(r) // RuneError for each malformed byte (n == 1)
			i += n
		}
		text = sb.String()
	}
	if t.spec.removeExtraWhitespaces {
		var sb strings.Builder
		sb.Grow(len(text))
		prevSpace := true // drops leading spaces
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c == ' ' {
				if prevSpace {
					continue
				}
				prevSpace = true
			} else {
				prevSpace = false
			}
			sb.WriteByte(c)
		}
		text = sb.String()
	}
	if text == "" {
		return ""
	}
	if t.spec.addDummyPrefix {
		text = " " + text
	}
	if t.spec.removeExtraWhitespaces {
		// SentencePiece strips trailing whitespace after escaping it, so a
		// literal "▁" at the end goes too (it cannot be told from a space).
		for {
			if trimmed := strings.TrimRight(text, " "); trimmed != text {
				text = trimmed
			} else if trimmed := strings.TrimSuffix(text, "▁"); trimmed != text {
				text = trimmed
			} else {
				break
			}
		}
	}
	return text
}

// DecodePiece returns the text of id printed after prev, with run.c's
// rules: "▁" becomes ' ', one leading space is dropped when prev is BOS, a
// byte piece becomes its raw byte, control pieces (BOS, EOS) give "", the
// unknown piece gives trainer_spec.unk_surface, and an id out of range "".
func (t *SentencePiece) DecodePiece(prev, id int32) string {
	if id < 0 || int(id) >= len(t.piece) {
		return ""
	}
	p := t.piece[id]
	switch p.typ {
	case spControl:
		return ""
	case spUnknown:
		return t.spec.unkSurface
	case spByte:
		if b, ok := hexBytePiece(p.text); ok {
			return string([]byte{b})
		}
	}
	s := strings.ReplaceAll(p.text, "▁", " ")
	if prev == t.spec.bosID && strings.HasPrefix(s, " ") {
		s = s[1:]
	}
	return s
}

// Decode returns SentencePiece's text for ids, as sp.decode(ids) does:
// control pieces give nothing, the unknown piece gives unk_surface, runs of
// byte pieces are joined and decoded as UTF-8 with each malformed byte
// becoming U+FFFD, "▁" becomes ' ', and while nothing has been output yet a
// leading "▁" of each piece is dropped (the dummy prefix; this needs
// add_dummy_prefix or remove_extra_whitespaces, as in SentencePiece).
// Ids outside the vocabulary are skipped.
func (t *SentencePiece) Decode(ids []int32) string {
	var out strings.Builder
	var raw []byte
	stripBOSSpace := t.spec.addDummyPrefix || t.spec.removeExtraWhitespaces
	flush := func() {
		for len(raw) > 0 {
			r, n := utf8.DecodeRune(raw)
			out.WriteRune(r)
			raw = raw[n:]
		}
	}
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.piece) {
			continue
		}
		p := t.piece[id]
		if p.typ == spByte {
			if b, ok := hexBytePiece(p.text); ok {
				raw = append(raw, b)
				continue
			}
		}
		flush()
		switch p.typ {
		case spControl:
		case spUnknown:
			out.WriteString(t.spec.unkSurface)
		default:
			s := p.text
			if stripBOSSpace && out.Len() == 0 {
				s = strings.TrimPrefix(s, "▁")
			}
			out.WriteString(strings.ReplaceAll(s, "▁", " "))
		}
	}
	flush()
	return out.String()
}
