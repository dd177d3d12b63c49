package jsonerr

import (
	"fmt"
	"strconv"
)

// CheckSurrogates returns an error naming the byte offset of the first
// \uXXXX escape in data that is half a UTF-16 surrogate pair without its
// other half ("\ud800" alone, "\udc00" first): JSON text that names no
// character. encoding/json decodes it to U+FFFD without a word, so two
// tokens "\ud800" and "\ud801" become the same string and one is lost;
// serde_json (HF tokenizers' Rust reader) refuses the file ("lone leading
// surrogate in hex escape"), and so does a reader that calls this first.
// Other escapes, and backslashes that are themselves escaped ("\\ud800"),
// are skipped; data need not be valid JSON (json.Unmarshal judges that).
func CheckSurrogates(data []byte) error {
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 >= len(data) {
			continue
		}
		if data[i+1] != 'u' {
			i++ // \" \\ \n ...: the escaped byte is no escape of its own
			continue
		}
		u, ok := hex4(data, i+2)
		if !ok {
			i++
			continue
		}
		switch {
		case u >= 0xD800 && u <= 0xDBFF:
			if i+11 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
				if v, ok := hex4(data, i+8); ok && v >= 0xDC00 && v <= 0xDFFF {
					i += 11 // the pair
					continue
				}
			}
			return fmt.Errorf("lone surrogate %s at byte %d: a high surrogate not followed by a low one names no character", data[i:i+6], i)
		case u >= 0xDC00 && u <= 0xDFFF:
			return fmt.Errorf("lone surrogate %s at byte %d: a low surrogate without the high one before it names no character", data[i:i+6], i)
		}
		i += 5
	}
	return nil
}

// hex4 decodes the 4 hex digits at data[i:i+4].
func hex4(data []byte, i int) (uint64, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[i:i+4]), 16, 16)
	return v, err == nil
}
