package engine

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/plan"
)

// gpu is a device that reports its GPU's memory, as the CUDA backend's does.
type gpu struct {
	backend.Device
	name string
	free int64
	err  error
}

func (g gpu) MemInfo() (string, int64, int64, error) { return g.name, g.free, 2 * g.free, g.err }

// TestCheckDevices: ranks are grouped by the GPU they report (all ranks on
// one GPU share it), devices that report nothing are skipped, and a
// failing report names the rank. 2 × 600 MiB = 1200/1024 = 1.171875 GiB,
// "1.17 GiB" to three digits.
func TestCheckDevices(t *testing.T) {
	p := &plan.Plan{Ranks: []plan.Rank{{Rank: 0, Total: 600 << 20}, {Rank: 1, Total: 600 << 20}}}
	one := []backend.Device{gpu{name: "cuda:0", free: 1 << 30}, gpu{name: "cuda:0", free: 1 << 30}}
	if err := checkDevices(p, one); !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "cuda:0 has 1 GiB free but the 2 ranks on it need 1.17 GiB") {
		t.Errorf("two ranks on one GPU: %v", err)
	}
	two := []backend.Device{gpu{name: "cuda:0", free: 1 << 30}, gpu{name: "cuda:1", free: 1 << 30}}
	if err := checkDevices(p, two); err != nil {
		t.Errorf("one rank per GPU: %v", err)
	}
	if err := checkDevices(p, []backend.Device{nil, nil}); err != nil {
		t.Errorf("devices without MemInfo: %v", err)
	}
	bad := []backend.Device{gpu{name: "cuda:0", free: 1 << 30}, gpu{err: errors.New("driver gone")}}
	if err := checkDevices(p, bad); err == nil || !strings.Contains(err.Error(), "rank 1: device memory: driver gone") {
		t.Errorf("failing report: %v", err)
	}
}
