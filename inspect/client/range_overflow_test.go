package client

import (
	"strconv"
	"strings"
	"testing"
)

// TestParseRangeLargestRow: `--tokens 9223372036854775807` (math.MaxInt)
// parsed to Range{Lo: MaxInt, Hi: MinInt}: the one-row range's end Lo+1
// wrapped around, a Hi that is neither Lo+1 nor the open end -1 (found by
// FuzzSliceText). Now it is refused naming the row; the row below it is
// still one row, [MaxInt-1, MaxInt).
func TestParseRangeLargestRow(t *testing.T) {
	max := strconv.Itoa(int(^uint(0) >> 1))
	r, err := ParseRange(max)
	if err == nil || !strings.Contains(err.Error(), max) {
		t.Fatalf("ParseRange(%s) = %+v, %v; want an error naming the row", max, r, err)
	}
	below := int(^uint(0)>>1) - 1
	r, err = ParseRange(strconv.Itoa(below))
	if err != nil || r.Lo != below || r.Hi != below+1 {
		t.Fatalf("ParseRange(%d) = %+v, %v; want [%d, %d)", below, r, err, below, below+1)
	}
}
