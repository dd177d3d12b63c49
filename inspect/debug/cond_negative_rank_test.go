package debug

import (
	"errors"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestCheckRanksNegativeNumber: `rank == -1` and `rank < -9223372036854775808`
// can hold on no rank (ranks are 0..world-1) and are refused as `rank ==
// 5` is at world size 2; the parser reads -1 as the negation of 1, and
// only bare numbers were looked at, so they were accepted and never
// fired. `rank > -1` holds on every rank and is kept; so is `rank == -(-1)`
// (rank 1).
func TestCheckRanksNegativeNumber(t *testing.T) {
	for _, src := range []string{"rank == -1", "-1 == rank", "rank < -9223372036854775808", "rank == -(-5)"} {
		c, err := ParseCond(src, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckRanks(2); !errors.Is(err, client.ErrRank) || !strings.Contains(err.Error(), "can never hold") {
			t.Errorf("%s at world size 2: %v, want it refused (no rank holds it)", src, err)
		}
	}
	for _, src := range []string{"rank > -1", "rank == -(-1)", "rank != -1"} {
		c, err := ParseCond(src, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckRanks(2); err != nil {
			t.Errorf("%s at world size 2: %v, want it kept", src, err)
		}
	}
}
