package capture

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestOpenJSONLByteOrderMark: a --data file saved with a UTF-8 byte order
// mark and CRLF line ends (Windows editors) holds the rows written by hand
// here, [1 2 3] and [4 5], both in the validating pass and when the job
// reads them again; it was refused as "invalid character 'ï'". A BOM on a
// later line is still bad JSON.
func TestOpenJSONLByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bom.jsonl")
	if err := os.WriteFile(p, []byte("\xef\xbb\xbf{\"input_ids\": [1, 2, 3]}\r\n{\"input_ids\": [4, 5]}\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := OpenJSONL(p, nil, Limits{MaxPositions: 3, Vocab: 6})
	if err != nil {
		t.Fatalf("OpenJSONL(BOM, CRLF): %v", err)
	}
	r, err := in.Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got [][]int32
	for {
		_, s, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		got = append(got, s.IDs)
	}
	if want := [][]int32{{1, 2, 3}, {4, 5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v; want %v", got, want)
	}
	q := filepath.Join(dir, "bom2.jsonl")
	if err := os.WriteFile(q, []byte("{\"input_ids\": [1]}\n\xef\xbb\xbf{\"input_ids\": [2]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJSONL(q, nil, Limits{}); err == nil {
		t.Errorf("OpenJSONL(BOM on line 2): nil error; want invalid JSON on line 2")
	}
}
