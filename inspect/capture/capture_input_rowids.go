package capture

import "encoding/json"

// rowIDs is a --data row's "input_ids" ([tokens] ids, int64 as JSON
// numbers), decoded only after its elements are counted: a row of more
// than max ids (max_position_embeddings; 0: no bound) is refused from the
// count, before the []int64 is made, so that a 1 GiB line of "1,1,1,..."
// (MaxLineBytes) costs no 4 GiB of int64s before the length check refuses
// it (over holds the count, for parseRow's message). null leaves ids nil
// (no input_ids).
type rowIDs struct {
	ids  []int64
	max  int
	over int // the count of ids when more than max (ids then nil)
}

// UnmarshalJSON counts the array's elements (commas at its top level,
// outside strings) and decodes it when they are within the bound; a value
// other than an array is decoded as []int64 is, for json's own error.
func (r *rowIDs) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if n := countElements(b); r.max > 0 && n > r.max {
		r.over = n
		return nil
	}
	var ids []int64
	if err := json.Unmarshal(b, &ids); err != nil {
		return err
	}
	if ids == nil {
		ids = []int64{}
	}
	r.ids = ids
	return nil
}

// countElements returns the number of elements of a JSON array b (valid
// JSON, as encoding/json hands an Unmarshaler), 0 for anything else.
func countElements(b []byte) int {
	n, depth, inStr, esc, empty := 0, 0, false, false, true
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			if depth == 1 {
				continue
			}
		case c == ']' || c == '}':
			depth--
			continue
		case c == ',' && depth == 1:
			n++
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		if depth >= 1 {
			empty = false
		}
	}
	if len(b) == 0 || b[0] != '[' || empty {
		return 0
	}
	return n + 1
}

// clipBytes is b, cut to its first n bytes with "..." when longer, for
// quoting a file's bytes in a message.
func clipBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
