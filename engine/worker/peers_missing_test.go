package worker

import "testing"

// TestMeshMissingNamesPeers: a worker of a --pp 2 --tp 2 session that
// wants slots 1, 2 and 3 and has linked only slot 2 names the other two
// as rank/stage pairs (slot = stage × tp + rank, worked out by hand).
func TestMeshMissingNamesPeers(t *testing.T) {
	m := &mesh{want: map[int]bool{3: true, 1: true, 2: true}, links: map[int]*link{2: {}}}
	if got, want := m.missing(2), "rank 1 of stage 0, rank 1 of stage 1"; got != want {
		t.Fatalf("missing = %q, want %q", got, want)
	}
	m.links[1], m.links[3] = &link{}, &link{}
	if got := m.missing(2); got != "" {
		t.Fatalf("missing with every link = %q, want empty", got)
	}
}
