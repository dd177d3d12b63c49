package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"hsdb/engine/quote"
)

// Tokenizer turns text into the token ids a model consumes and ids back into
// text. Implementations are immutable after loading and safe for concurrent
// use by several goroutines.
type Tokenizer interface {
	// Encode returns the ids of text without any BOS/EOS or other special
	// token added (callers prepend BOS themselves). It equals, per loader,
	// llama2.c run.c encode(text, bos=0, eos=0), SentencePiece
	// sp.encode(text) (with a tokenizer_config.json, transformers'
	// tok(text, add_special_tokens=False).input_ids: LoadSentencePieceDir),
	// or HF tokenizers Tokenizer.encode(text, add_special_tokens=False).ids.
	Encode(text string) ([]int32, error)
	// Decode returns the text of ids, following the reference of each loader
	// (see the loader's Decode doc). Ids outside [0, VocabSize()) are skipped.
	Decode(ids []int32) string
	// DecodePiece returns the bytes a streaming generator prints for id when
	// the previous token was prev, as llama2.c run.c decode(prev, id) does:
	// byte-fallback pieces become the raw byte, so a piece may be an
	// incomplete UTF-8 sequence that only the following pieces complete.
	DecodePiece(prev, id int32) string
	// VocabSize is the size of the id space: one more than the largest id
	// Encode or the vocabulary can produce (the rows an embedding needs).
	VocabSize() int
	// BOS is the beginning-of-sequence id, or -1 when the tokenizer has none.
	BOS() int32
	// EOS is the end-of-sequence id, or -1 when the tokenizer has none.
	EOS() int32
	// Name describes the tokenizer for messages: its kind and file name,
	// e.g. "llama2c:tok512.bin".
	Name() string
}

// TextBOS is the id a text's ids start with when hsdb tokenizes a text to
// run it (`input text`, capture's "text" rows, generate --prompt), as the
// tokenizer's reference starts it, or -1 for none: the tokenizer's own
// TextBOS where it has one (HF.TextBOS: the id transformers' fast
// tokenizer prepends, from tokenizer.json's post_processor or
// tokenizer_config.json's add_bos_token, -1 for a model with a bos_token
// and add_bos_token false; Tiktoken.TextBOS: -1, as Kimi's tokenizer adds
// no [BOS]; SentencePiece.TextBOS: BOS, or with a tokenizer_config.json
// bos_token only when add_bos_token is true, as transformers 5.17 does),
// else BOS() (llama2.c's run.c encode(bos=1)).
func TextBOS(t interface{ BOS() int32 }) int32 {
	if tb, ok := t.(interface{ TextBOS() int32 }); ok {
		return tb.TextBOS()
	}
	return t.BOS()
}

// TextEOS is the id a text's ids end with when hsdb tokenizes a text to
// run it (`input text`, capture's "text" rows, generate --prompt), as the
// tokenizer's reference ends it, or -1 for none: the tokenizer's own
// TextEOS where it has one (HF.TextEOS: the id transformers' fast
// tokenizer appends, from tokenizer_config.json's add_eos_token or
// tokenizer.json's post_processor; SentencePiece.TextEOS: with a
// tokenizer_config.json, eos_token when add_eos_token is true), else -1
// (llama2.c's run.c encodes a prompt with eos=0; Kimi's tiktoken adds
// none).
func TextEOS(t any) int32 {
	if te, ok := t.(interface{ TextEOS() int32 }); ok {
		return te.TextEOS()
	}
	return -1
}

// Sentinel errors; every error a loader returns wraps one of these with the
// file name and the position (token index, JSON field) of the problem.
var (
	// ErrFormat marks a tokenizer file that is truncated, malformed or
	// inconsistent (negative lengths, lengths beyond the file, bad JSON,
	// merges naming tokens missing from the vocabulary, ...).
	ErrFormat = errors.New("malformed tokenizer file")
	// ErrUnsupported marks a well-formed tokenizer file that uses a feature
	// this package does not implement (a normalizer or pre-tokenizer type,
	// a SentencePiece model type, ...). hsdb refuses such files rather than
	// produce ids that silently differ from the reference implementation.
	ErrUnsupported = errors.New("unsupported tokenizer feature")
)

// quoteClip quotes a string a tokenizer file gives (a token, a merge, a
// type or class name, a tiktoken.model line) for an error message: its
// first 64 bytes and its size when longer (quote.Clip). Every such string
// in this package's errors goes through it, so a 1 MB token makes an
// error of about 100 bytes rather than of 1 MB; the file and field are
// named around it.
func quoteClip(s string) string { return quote.Clip(s, 64) }

// ErrTooManyTokens marks a text that encodes to more ids than the bound
// a caller gave (EncodeAtMost): a sequence longer than the model takes.
var ErrTooManyTokens = errors.New("too many tokens")

// Encoder is the part of a Tokenizer EncodeAtMost needs.
type Encoder interface {
	Encode(text string) ([]int32, error)
}

// maxEncoder is a tokenizer that stops encoding once the ids pass a bound
// (Tiktoken, HF): max < 0 is no bound, else more than max ids is an error
// wrapping ErrTooManyTokens.
type maxEncoder interface {
	EncodeMax(text string, max int) ([]int32, error)
}

// EncodeAtMost returns t's ids of text. A tokenizer that can stop early
// (Tiktoken, HF) returns an error wrapping ErrTooManyTokens once its ids
// number more than max (max < 0: no bound), so a text far too long for
// the model is refused after about max tokens of work instead of after
// tokenizing all of it (200 MB of spaces took 3.5 minutes with Kimi's
// tiktoken.model before the count refused it); the others (llama2.c,
// SentencePiece) encode the whole text and the caller counts.
func EncodeAtMost(t Encoder, text string, max int) ([]int32, error) {
	if m, ok := t.(maxEncoder); ok {
		return m.EncodeMax(text, max)
	}
	return t.Encode(text)
}

// tooMany is the ErrTooManyTokens error of tokenizer name for a text of n
// bytes.
func tooMany(name string, max, n int) error {
	return fmt.Errorf("%s: %w: more than %d in a text of %d bytes (encoding stopped there)", name, ErrTooManyTokens, max, n)
}

// capHint is the capacity to reserve for the ids of a text of n bytes
// under bound max (< 0: none).
func capHint(n, max int) int {
	c := n/3 + 1
	if max >= 0 && c > max+1 {
		c = max + 1
	}
	return c
}

// lossyUTF8 converts b to a valid UTF-8 string the way Rust's
// String::from_utf8_lossy does (HF tokenizers' decoders use it): each
// maximal invalid subsequence — a lead byte followed by as many bytes as can
// still start a valid sequence, or a lone byte — becomes one U+FFFD. This is
// the Unicode "maximal subpart" practice (Unicode §3.9, U+FFFD substitution),
// which differs from Go's utf8.DecodeRune on truncated sequences.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[i : i+n])
			i += n
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart returns the length (>= 1) of the longest prefix of b that
// is a prefix of some well-formed UTF-8 sequence, given that b does not start
// with a complete valid sequence. The ranges of the second byte follow
// Unicode Table 3-7 (well-formed UTF-8 byte sequences).
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 1; k <= need && k < len(b); k++ {
		x := b[k]
		if k == 1 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xBF {
			break
		}
		n++
	}
	return n
}

// The loaders' types implement Tokenizer.
var (
	_ Tokenizer = (*Llama2C)(nil)
	_ Tokenizer = (*SentencePiece)(nil)
	_ Tokenizer = (*HF)(nil)
	_ Tokenizer = (*Tiktoken)(nil)
)

// MaxFileBytes bounds a tokenizer file read whole (tokenizer.json,
// tokenizer_config.json, tokenizer.model, tokenizer.bin): the largest
// released tokenizer.json files are tens of MB.
const MaxFileBytes = 512 << 20

// MaxTokenID bounds a token id read from a tokenizer file (tokenizer.json's
// model.vocab and added_tokens, a tiktoken special token's id): 2^24 − 1,
// one below the largest vocab_size hsdb accepts in config.json
// (model.SizeLimits; Gemma 3's vocabulary is 262,144). A tokenizer keeps a
// table indexed by id, so one id of 2·10^9 in an otherwise tiny file would
// ask for 32 GB.
const MaxTokenID = 1<<24 - 1
