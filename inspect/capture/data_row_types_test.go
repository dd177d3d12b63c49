package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataRowTypeErrors: a --data row of the wrong JSON type said
// "json: cannot unmarshal number 2.5 into Go struct field
// jsonlRow.input_ids of type int64"; it now names the line, the field and
// the JSON value expected.
func TestDataRowTypeErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ row, want string }{
		{`{"input_ids": [1, 2.5, 3]}`, "d.jsonl:1: input_ids: got number 2.5, want an integer"},
		{`{"input_ids": "1,2"}`, "d.jsonl:1: input_ids: got a JSON string, want an array of integers"},
		{`[1, 2, 3]`, "d.jsonl:1: got a JSON array, want an object"},
	} {
		p := filepath.Join(dir, "d.jsonl")
		if err := os.WriteFile(p, []byte(c.row+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readJSONL(p, nil, Limits{})
		if err == nil || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v, want %q", c.row, err, c.want)
		}
	}
}
