package repl

import (
	"regexp"
	"testing"
)

// TestLensNaNShardRankedFirst: `set var stream = nan --rank 1` at the last
// layer makes rank 1's vocabulary shard of the lens logits NaN (stories260K:
// vocab 512 over 2 ranks, rank 1 holds ids 256..511, no padding as 512 is a
// multiple of 64) while rank 0's stay finite. The top-k sort compared with
// `>`, false both ways for NaN, so the order was undefined: the lens listed
// finite logits that were not the largest, each with probability NaN, and
// said nothing of the NaN. NaN now ranks first, as torch.topk ranks it
// (lowest id first among them: 256, 257, 258), and a note per sequence
// counts the NaN logits.
func TestLensNaNShardRankedFirst(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.4")
	f.AssertExec("run", "Stopped at model.layers.4 ")
	f.Exec("set var stream = nan --rank 1")
	out := f.AssertExec("lens 3", "seq 0: 256 of 512 logits are NaN", "seq 1: 256 of 512 logits are NaN")
	for i, id := range []string{"256", "257", "258"} {
		re := regexp.MustCompile(`(?m)^` + string(rune('1'+i)) + `\s+` + id + `\s.*\sNaN\s+NaN\s*$`)
		if got := len(re.FindAllString(out, -1)); got != 2 {
			t.Fatalf("lens 3: want rank %d to be id %s with logit NaN in both sequences, found %d:\n%s", i+1, id, got, out)
		}
	}
}
