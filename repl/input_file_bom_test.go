package repl

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInputFileBOM: a JSON-lines file saved with a UTF-8 byte order mark
// (Notepad does) is read by `hsdb capture --data`, but `input file`
// refused the same file: "not valid JSON: invalid character 'ï'". The
// mark is ignored on the first line (RFC 8259 §8.1), so the batch is the
// file's two rows, ids as written; a mark later in the file is still
// refused.
func TestInputFileBOM(t *testing.T) {
	f := newFake(t, 1)
	p := filepath.Join(t.TempDir(), "bom.jsonl")
	if err := os.WriteFile(p, []byte("\xef\xbb\xbf{\"input_ids\": [1, 403, 407]}\n{\"input_ids\": [1, 400]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.AssertExec("input file "+p, "seq 0: [1, 403, 407]", "seq 1: [1, 400]")
	q := filepath.Join(t.TempDir(), "bom2.jsonl")
	if err := os.WriteFile(q, []byte("{\"input_ids\": [1, 403]}\n\xef\xbb\xbf{\"input_ids\": [1, 400]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.AssertError("input file "+q, q+":2: not valid JSON")
}
