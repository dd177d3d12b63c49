package debug

import (
	"strings"
	"testing"
)

// TestInputFileRowKeys: `input file` kept the last of a repeated
// "input_ids" (a Go map, as json.loads does) while `hsdb capture --data`
// kept it too but also took "INPUT_IDS" for it; both now refuse a field
// given twice or in other case, the same rows the same way.
func TestInputFileRowKeys(t *testing.T) {
	for _, c := range []struct{ row, want string }{
		{`{"input_ids": [0, 1], "input_ids": [3]}`, `"input_ids" appears more than once in the row`},
		{`{"text": "a", "text": "b"}`, `"text" appears more than once in the row`},
		{`{"input_ids": [0, 1], "Loss_Mask": [1, 1]}`, `key "Loss_Mask" is not "loss_mask"`},
	} {
		if _, _, _, err := parseJSONLRecord([]byte(c.row)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.row, err, c.want)
		}
	}
	if _, _, ids, err := parseJSONLRecord([]byte(`{"input_ids": [5, 6], "meta": {"input_ids": [1]}}`)); err != nil || len(ids) != 2 || ids[0] != 5 || ids[1] != 6 {
		t.Errorf("a nested input_ids is not the row's: ids %v, err %v, want [5 6]", ids, err)
	}
}
