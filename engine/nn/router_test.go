package nn

import "testing"

// TestExpertRange: vLLM's linear expert placement (10 experts over 4 ranks:
// 3, 3, 2, 2). The routing rule itself is tested in engine/backend/moeref.
func TestExpertRange(t *testing.T) {
	want := [][2]int{{0, 3}, {3, 6}, {6, 8}, {8, 10}}
	for r, w := range want {
		if got := ExpertRange(10, 4, r); got != w {
			t.Errorf("rank %d: experts %v, want %v", r, got, w)
		}
	}
}
