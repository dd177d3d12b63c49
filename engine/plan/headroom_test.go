package plan

import "testing"

// TestHeadroom: what a plan that fits leaves free. With Shared (the CPU
// backend's ranks in one host) all ranks draw on the same memory, so the
// headroom is the memory less their sum; on devices, one per rank, it is
// the memory less the fullest rank. By hand: ranks of 300 and 500 bytes
// in 1000: shared 1000 - 800 = 200, per device 1000 - 500 = 500. (`hsdb
// plan --device cpu` printed the per-device figure for shared ranks: 576
// MiB left of 1100 MiB for two ranks of 524 MiB, which leave 52 MiB.)
func TestHeadroom(t *testing.T) {
	ranks := []Rank{{Rank: 0, Total: 300}, {Rank: 1, Total: 500}}
	for _, c := range []struct {
		shared bool
		want   int64
	}{{true, 200}, {false, 500}} {
		p := &Plan{DeviceBytes: 1000, Shared: c.shared, Ranks: ranks}
		if got, err := p.Headroom(); err != nil || got != c.want {
			t.Errorf("shared %v: headroom %d, %v, want %d", c.shared, got, err, c.want)
		}
	}
}
