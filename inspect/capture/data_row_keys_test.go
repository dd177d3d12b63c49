package capture

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDataRowKeysAsPythonReadsThem: a --data row's keys were matched as
// encoding/json matches struct fields, case-insensitively and the last of
// a repeated key winning, so {"input_ids": [0, 1], "INPUT_IDS": [3]} was
// captured as the sequence [3] while Python's json.loads(row)["input_ids"]
// (what the training pipeline reads) is [0, 1], and "Loss_Mask" replaced
// loss_mask. Such rows are now refused, naming the line and the key; the
// expected sequences are what json.loads gives for the rows by hand.
func TestDataRowKeysAsPythonReadsThem(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	for _, c := range []struct{ row, want string }{
		{`{"input_ids": [0, 1], "INPUT_IDS": [3]}`, `d.jsonl:2: key "INPUT_IDS" is not "input_ids": keys are case-sensitive`},
		{`{"Input_Ids": [0, 1]}`, `d.jsonl:2: key "Input_Ids" is not "input_ids"`},
		{`{"input_ids": [0, 1, 5], "loss_mask": [1, 1, 1], "Loss_Mask": [0, 0, 1]}`, `d.jsonl:2: key "Loss_Mask" is not "loss_mask"`},
		{`{"input_ids": [0, 1], "input_ids": [3]}`, `d.jsonl:2: "input_ids" appears more than once in the row`},
		{`{"input_ids": [0, 1], "input\u005fids": [3]}`, `d.jsonl:2: "input_ids" appears more than once in the row`},
		{`{"input_ids": [0, 1], "loss_mask": [1, 1], "loss_mask": [0, 1]}`, `d.jsonl:2: "loss_mask" appears more than once`},
		{`{"id": "a", "input_ids": [0, 1], "id": "b"}`, `d.jsonl:2: "id" appears more than once`},
	} {
		if err := os.WriteFile(p, []byte(`{"input_ids": [4]}`+"\n"+c.row+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readJSONL(p, nil, Limits{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.row, err, c.want)
		}
	}
	// Rows every reader reads alike still pass: other keys are ignored, an
	// escaped key is its unescaped name (json.loads gives input_ids [7, 8]).
	rows := `{"input_ids": [0, 1], "source": "x", "INPUT": 3}` + "\n" + `{"input\u005fids": [7, 8], "loss_mask": [0, 1]}` + "\n"
	if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := readJSONL(p, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Seqs) != 2 || !slices.Equal(in.Seqs[0].IDs, []int32{0, 1}) || !slices.Equal(in.Seqs[1].IDs, []int32{7, 8}) || !slices.Equal(in.Seqs[1].LossMask, []int64{0, 1}) {
		t.Errorf("rows read as %+v, want [0 1] and [7 8] with loss_mask [0 1]", in.Seqs)
	}
}
