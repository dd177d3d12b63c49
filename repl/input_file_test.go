package repl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestInputFileRecordErrors: a JSON-lines record of the wrong shape is
// refused naming the file, the line and the field in the file's terms (a
// JSON array, a number that is not a token id, an empty input_ids), never
// with Go's type names (`Go value of type struct { Text *string ... }`).
func TestInputFileRecordErrors(t *testing.T) {
	f := newFake(t, 1)
	path := filepath.Join(t.TempDir(), "b.jsonl")
	for body, want := range map[string]string{
		"[1, 2]\n":                                    path + `:1: want a JSON object {"text": ...} or {"input_ids": [...]}, got a JSON array`,
		"\"hi\"\n":                                    path + `:1: want a JSON object {"text": ...} or {"input_ids": [...]}, got a JSON string`,
		"{\"input_ids\": [1.5]}\n":                    path + ":1: input_ids[0] is 1.5, not a token id (a non-negative integer)",
		"{\"input_ids\": [1, 3000000000]}\n":          path + ":1: input_ids[1] is 3000000000, not a token id (a non-negative integer)",
		"{\"input_ids\": [1, \"2\"]}\n":               path + `:1: input_ids[1] is "2", not a token id (a non-negative integer)`,
		"{\"input_ids\": 5}\n":                        path + `:1: "input_ids" is a JSON number, want a list of token ids`,
		"{\"input_ids\": [1]}\n{\"input_ids\": []}\n": path + ":2: input_ids is empty",
		"{\"text\": 1}\n":                             path + `:1: "text" is a JSON number, want a string`,
		"{\"text\": \"\", \"input_ids\": [1]}\n":      path + `:1: both "text" and "input_ids"; give one`,
	} {
		writeFile(t, path, body)
		err := f.Term.Exec("input file " + path)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("input file with %q: %v\nwant %q", body, err, want)
		}
	}
}
