package tokenizer

import (
	"fmt"
	"strings"
)

// checkSPPieces refuses the pieces SentencePiece itself refuses when it
// loads a model (ModelInterface::InitializePieces, model_interface.cc):
// an empty piece, one holding a NUL byte, a piece given twice (among the
// normal, user-defined and unused pieces, or among the others: every
// SentencePiece version refuses those), a second piece of type UNKNOWN,
// and a BYTE piece while trainer_spec.byte_fallback is false or one that
// is not <0x00>..<0xFF>. go-sentencepiece checks only some of these and
// quotes a bad byte piece whole; hsdb loaded the rest, encoding with a
// model its reference does not load. Errors wrap ErrFormat and name the
// piece by index, its text clipped (quoteClip).
func checkSPPieces(pieces []spPiece, byteFallback bool) error {
	normal := map[string]int{}   // NORMAL, USER_DEFINED, UNUSED pieces
	reserved := map[string]int{} // UNKNOWN, CONTROL, BYTE pieces
	unk := -1
	for i, p := range pieces {
		switch {
		case p.text == "":
			return fmt.Errorf("%w: piece %d is empty", ErrFormat, i)
		case strings.IndexByte(p.text, 0) >= 0:
			return fmt.Errorf("%w: piece %d %s holds a NUL byte", ErrFormat, i, quoteClip(p.text))
		}
		seen := reserved
		if p.typ == spNormal || p.typ == spUserDefined || p.typ == spUnused {
			seen = normal
		}
		if j, dup := seen[p.text]; dup {
			return fmt.Errorf("%w: pieces %d and %d are both %s", ErrFormat, j, i, quoteClip(p.text))
		}
		seen[p.text] = i
		switch p.typ {
		case spUnknown:
			if unk >= 0 {
				return fmt.Errorf("%w: pieces %d and %d are both of type UNKNOWN (one unk piece)", ErrFormat, unk, i)
			}
			unk = i
		case spByte:
			if !byteFallback {
				return fmt.Errorf("%w: piece %d %s is of type BYTE, but trainer_spec.byte_fallback is false", ErrFormat, i, quoteClip(p.text))
			}
			if !isSPBytePiece(p.text) {
				return fmt.Errorf("%w: piece %d %s is of type BYTE, but not <0x00>..<0xFF>", ErrFormat, i, quoteClip(p.text))
			}
		}
	}
	return nil
}

// isSPBytePiece says whether s is a byte piece as SentencePiece writes
// one: "<0x" two upper-case hex digits ">" (ByteToPiece's "<0x%02X>").
func isSPBytePiece(s string) bool {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return false
	}
	for _, c := range s[3:5] {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
