package capture

import (
	"fmt"
	"unicode/utf8"

	"hsdb/engine/jsonerr"
)

// RowTextFault says why a JSONL row's bytes name no Unicode text, or
// returns nil: bytes that are not UTF-8 (a Latin-1 or UTF-16 file, a
// line cut inside a character) or a \uXXXX escape that is half a
// surrogate pair ("\ud800" alone). encoding/json turns each into U+FFFD
// without a word, so a "text" row was tokenized as another text (and an
// "id" became another id), where Python's json.loads over the file
// refuses the bytes (UnicodeDecodeError) and its tokenizers refuse the
// lone surrogate (it cannot be encoded as UTF-8): there is no reference
// sequence for such a row.
func RowTextFault(row []byte) error {
	if !utf8.Valid(row) {
		i := 0
		for i < len(row) {
			r, n := utf8.DecodeRune(row[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("byte %d (0x%02x) is not UTF-8: a JSONL row is UTF-8 text (re-encode the file)", i, row[i])
	}
	if err := jsonerr.CheckSurrogates(row); err != nil {
		return fmt.Errorf("%v (Python's tokenizers cannot encode it)", err)
	}
	return nil
}
