package check

import (
	"strings"
	"testing"

	"hsdb/inspect/capture"
)

// TestEmptyCaptureFails: a capture whose input_ids hold no token (shape
// [0], its hidden states [0, hidden]) holds nothing a trainer could learn
// from; check fails its structure rule saying so instead of passing every
// rule vacuously and calling the file valid.
func TestEmptyCaptureFails(t *testing.T) {
	p := writeCapture(t, []int64{}, map[int][]float32{0: {}, 1: {}}, 4)
	r := CheckFile(p, CheckOptions{})
	rr, ok := r.Rule(capture.RuleStructure)
	if !ok || rr.Status != capture.Fail || !strings.Contains(rr.Detail, "no tokens") {
		t.Fatalf("structure rule %+v: want a failure saying the capture holds no tokens\n%s", rr, strings.Join(r.Lines(), "\n"))
	}
	if !r.Failed() {
		t.Fatalf("an empty capture passed:\n%s", strings.Join(r.Lines(), "\n"))
	}
}
