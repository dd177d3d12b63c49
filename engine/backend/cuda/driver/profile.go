//go:build cuda

package driver

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// profileOn is HSDB_CUDA_PROFILE=1: every backend op records a pair of
// timing events around the work it queues, and ProfileReport sums them per
// op kind.
var profileOn = os.Getenv("HSDB_CUDA_PROFILE") == "1"

// ProfileEnabled reports whether HSDB_CUDA_PROFILE=1 was set at start.
func ProfileEnabled() bool { return profileOn }

// profRec is one profiled op: its kind, the events around its work on the
// stream and the host time spent queueing it on the device thread.
type profRec struct {
	op   string
	a, b cuEvent
	host time.Duration
}

// Profiled runs f (on the device thread) and, when profiling, records
// timing events before and after the work it queues. An event failure
// drops the record rather than failing the op.
func (d *GPU) Profiled(op string, f func() error) error {
	if !profileOn {
		return f()
	}
	t0 := time.Now()
	a, errA := drv.eventCreate(true)
	okA := errA == nil && drv.eventRecord(a, d.st) == nil
	err := f()
	b, errB := drv.eventCreate(true)
	okB := errB == nil && drv.eventRecord(b, d.st) == nil
	if okA && okB {
		d.prof = append(d.prof, profRec{op: op, a: a, b: b, host: time.Since(t0)})
	}
	return err
}

// ProfileRow is one op kind's totals in a profile.
type ProfileRow struct {
	Op       string
	Calls    int
	DeviceMS float64 // sum of the device time between each call's events
	HostMS   float64 // sum of the device thread's time queueing the calls
}

// ProfileReport waits for every shared GPU to finish its queued work and
// returns the per-op-kind totals recorded since the last report, largest
// device time first, then forgets them. It returns nil without
// HSDB_CUDA_PROFILE=1. Errors are the driver's (a failed synchronise).
func ProfileReport() ([]ProfileRow, error) {
	if !profileOn {
		return nil, nil
	}
	rows := map[string]*ProfileRow{}
	for _, g := range openShared() {
		err := g.Do(func() error {
			defer func() {
				for _, r := range g.prof {
					drv.eventDestroy(r.a)
					drv.eventDestroy(r.b)
				}
				g.prof = nil
			}()
			if err := drv.streamSynchronize(g.st); err != nil {
				return err
			}
			for _, r := range g.prof {
				ms, err := drv.eventElapsed(r.a, r.b)
				if err != nil {
					continue
				}
				row := rows[r.op]
				if row == nil {
					row = &ProfileRow{Op: r.op}
					rows[r.op] = row
				}
				row.Calls++
				row.DeviceMS += ms
				row.HostMS += float64(r.host) / 1e6
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]ProfileRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DeviceMS > out[j].DeviceMS })
	return out, nil
}

// FormatProfile renders rows as a table with each kind's share of the
// device time.
func FormatProfile(rows []ProfileRow) string {
	var total float64
	for _, r := range rows {
		total += r.DeviceMS
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %7s %11s %7s %10s\n", "op", "calls", "device ms", "share", "host ms")
	for _, r := range rows {
		share := 0.0
		if total > 0 {
			share = 100 * r.DeviceMS / total
		}
		fmt.Fprintf(&b, "%-18s %7d %11.3f %6.1f%% %10.3f\n", r.Op, r.Calls, r.DeviceMS, share, r.HostMS)
	}
	fmt.Fprintf(&b, "%-18s %7s %11.3f\n", "total", "", total)
	return b.String()
}
