package check

import (
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestSeqLensSumMismatch: --seq-lens whose lengths do not add up to the
// file's len(input_ids) (4 here) fail the one-sequence rule saying so,
// instead of a 100-token claim about a 4-token file passing as "one
// sequence" or 5 + 5 being reported as the file's split.
func TestSeqLensSumMismatch(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = -2 * v
	}
	p := writeCapture(t, []int64{1, 5, 9, 3}, map[int][]float32{0: x, 1: y}, 4)
	for _, tc := range []struct {
		lens []int
		want string
	}{
		{[]int{100}, "--seq-lens 100 sum to 100, but input_ids holds 4 tokens"},
		{[]int{5, 5}, "--seq-lens 5,5 sum to 10, but input_ids holds 4 tokens"},
		{[]int{1, 2}, "--seq-lens 1,2 sum to 3, but input_ids holds 4 tokens"},
	} {
		r := CheckFile(p, CheckOptions{SeqLens: tc.lens})
		rr, ok := r.Rule(capture.RuleOneSeq)
		if !ok || rr.Status != capture.Fail || !strings.Contains(rr.Detail, tc.want) {
			t.Errorf("--seq-lens %v: rule %+v; want a failure %q", tc.lens, rr, tc.want)
		}
	}
	r := CheckFile(p, CheckOptions{SeqLens: []int{2, 2}})
	if rr, _ := r.Rule(capture.RuleOneSeq); strings.Contains(rr.Detail, "sum to") {
		t.Errorf("--seq-lens 2,2 of 4 tokens called a mismatch: %+v", rr)
	}
}
