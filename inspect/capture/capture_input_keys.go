package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// RowFields are the keys of a JSONL input row that hsdb reads (`hsdb
// capture --data`, the debugger's `input file`); any other key is ignored.
var RowFields = []string{"id", "input_ids", "loss_mask", "text"}

// RowKeyFault says why the keys of row, one JSON object (already decoded
// once, so valid JSON), do not name its fields unambiguously, or returns
// nil. A field given twice is refused: JSON readers disagree on which one
// counts (Python's json.loads, which builds the datasets hsdb's captures
// are trained beside, keeps the last; encoding/json into a struct also
// the last, some streaming readers the first). A key that equals a field
// only when case is ignored ("Input_IDs", "LOSS_MASK") is refused too:
// encoding/json matches struct fields case-insensitively, so it would
// have been read as the field, while Python's row["input_ids"] does not
// see it: hsdb's capture and the trainer's view of the row would differ.
// Keys are compared after JSON unescaping ("input\u005fids" is input_ids),
// as every reader does.
func RowKeyFault(row []byte) error {
	dec := json.NewDecoder(bytes.NewReader(row))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: the row's decode says so
	}
	seen := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
		for _, f := range RowFields {
			switch {
			case key == f:
				seen[f]++
				if seen[f] == 2 {
					return fmt.Errorf("%q appears more than once in the row: give it once (JSON readers disagree on which one counts: Python's json keeps the last)", f)
				}
			case strings.EqualFold(key, f):
				return fmt.Errorf("key %q is not %q: keys are case-sensitive (Python's json and the trainers read %q exactly); rename it", key, f, f)
			}
		}
	}
	return nil
}
