package check

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// TestIDsNameInProblems: the problems found in a file's token ids name
// its tensor as the file does (speculators' token_ids), and input_ids
// where the file has none.
func TestIDsNameInProblems(t *testing.T) {
	l := &Layout{InputIDs: tensor.FromI64([]int64{1, -1, 7}, 3), IDsKey: "token_ids"}
	if got := idProblems(l, nil); len(got) != 1 || !strings.HasPrefix(got[0], "token_ids[1] = -1 is not a token id") {
		t.Errorf("idProblems = %q, want token_ids[1] = -1 named", got)
	}
	if got := seqLensProblem(tensor.FromI64([]int64{2, 4}, 2), 3, l.IDsName()); got != "seq_lens[1] is 4, more than the 3 tokens of token_ids" {
		t.Errorf("seqLensProblem = %q", got)
	}
	if err := withinContext([]int{600}, 512, false, l.IDsName()); !errors.Is(err, ErrLongerThanContext) || !strings.Contains(err.Error(), "token_ids holds 600 tokens") {
		t.Errorf("withinContext = %v", err)
	}
	if got := (&Layout{}).IDsName(); got != "input_ids" {
		t.Errorf("IDsName without ids = %q, want input_ids", got)
	}
}
