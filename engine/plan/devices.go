package plan

import (
	"fmt"
	"strings"

	"hsdb/engine/bytesize"
)

// DeviceMemory is one GPU as a load finds it: its name ("cuda:0"), the ranks
// placed on it (one under NCCL; every rank when all run on one GPU) and the
// bytes free on it (the driver's cuMemGetInfo, other processes included).
type DeviceMemory struct {
	Name  string
	Ranks []int
	Free  int64
}

// CheckDevices returns nil when, on every device, the totals of the ranks
// placed on it fit its free memory; otherwise an error wrapping ErrMemory
// naming the device, its ranks, what they need and the shortfall (the
// device short of most first).
func (p *Plan) CheckDevices(devs []DeviceMemory) error {
	var worst error
	var worstShort int64
	for _, d := range devs {
		var c counter
		names := make([]string, 0, len(d.Ranks))
		for _, r := range d.Ranks {
			if r < 0 || r >= len(p.Ranks) {
				return fmt.Errorf("device %s: rank %d is not one of the plan's %d ranks", d.Name, r, len(p.Ranks))
			}
			c.add(p.Ranks[r].Total)
			names = append(names, fmt.Sprintf("rank %d %s", r, bytesize.Binary(p.Ranks[r].Total)))
		}
		need, err := c.value("device " + d.Name)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMemory, err)
		}
		if need <= d.Free || need-d.Free <= worstShort {
			continue
		}
		worstShort = need - d.Free
		who := fmt.Sprintf("rank %d needs %s", d.Ranks[0], bytesize.Binary(need))
		if len(names) > 1 {
			who = fmt.Sprintf("the %d ranks on it need %s (%s)", len(names), bytesize.Binary(need), strings.Join(names, ", "))
		}
		worst = fmt.Errorf("%w: %s has %s free but %s: %s short; %s",
			ErrMemory, d.Name, bytesize.Binary(d.Free), who, bytesize.Binary(need-d.Free), FitAdvice)
	}
	return worst
}
