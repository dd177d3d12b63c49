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
	// GapMS sums the stream's idle time just before each call: from the
	// end event of the op queued before it on the same GPU to its own
	// start event. The GPU waited for the host there (a launch that came
	// late, or a synchronisation that drained the stream).
	GapMS float64
}

// ProfileEvent is one profiled op in queue order on its GPU.
type ProfileEvent struct {
	GPU      int // the GPU's ordinal
	Op       string
	DeviceMS float64 // between the op's events
	GapMS    float64 // the stream's idle time before the op (0 for a GPU's first op)
	HostMS   float64 // the device thread's time queueing it
}

// ProfileTrace waits for every shared GPU to finish its queued work and
// returns every op recorded since the last trace or report, in queue
// order per GPU, then forgets them. It returns nil without
// HSDB_CUDA_PROFILE=1. Errors are the driver's (a failed synchronise).
func ProfileTrace() ([]ProfileEvent, error) {
	if !profileOn {
		return nil, nil
	}
	var out []ProfileEvent
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
			var prev cuEvent
			havePrev := false
			for _, r := range g.prof {
				ms, err := drv.eventElapsed(r.a, r.b)
				if err != nil {
					havePrev = false
					continue
				}
				gap := 0.0
				if havePrev {
					if d, err := drv.eventElapsed(prev, r.a); err == nil && d > 0 {
						gap = d
					}
				}
				prev, havePrev = r.b, true
				out = append(out, ProfileEvent{GPU: g.ordinal, Op: r.op, DeviceMS: ms, GapMS: gap, HostMS: float64(r.host) / 1e6})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ProfileReport is ProfileTrace summed per op kind, largest device time
// first.
func ProfileReport() ([]ProfileRow, error) {
	ev, err := ProfileTrace()
	if err != nil || ev == nil {
		return nil, err
	}
	return ProfileRows(ev), nil
}

// ProfileRows sums a trace per op kind, largest device time first.
func ProfileRows(ev []ProfileEvent) []ProfileRow {
	rows := map[string]*ProfileRow{}
	for _, e := range ev {
		row := rows[e.Op]
		if row == nil {
			row = &ProfileRow{Op: e.Op}
			rows[e.Op] = row
		}
		row.Calls++
		row.DeviceMS += e.DeviceMS
		row.HostMS += e.HostMS
		row.GapMS += e.GapMS
	}
	out := make([]ProfileRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DeviceMS > out[j].DeviceMS })
	return out
}

// FormatTrace renders a trace one op a line (queue order), runs of the
// same op kind folded into one line with their count.
func FormatTrace(ev []ProfileEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %-18s %5s %11s %9s %9s\n", "gpu", "op", "runs", "device ms", "gap ms", "host ms")
	for i := 0; i < len(ev); {
		j := i + 1
		for j < len(ev) && ev[j].Op == ev[i].Op && ev[j].GPU == ev[i].GPU {
			j++
		}
		var dev, gap, host float64
		for _, e := range ev[i:j] {
			dev, gap, host = dev+e.DeviceMS, gap+e.GapMS, host+e.HostMS
		}
		fmt.Fprintf(&b, "%-4d %-18s %5d %11.3f %9.3f %9.3f\n", ev[i].GPU, ev[i].Op, j-i, dev, gap, host)
		i = j
	}
	return b.String()
}

// FormatProfile renders rows as a table with each kind's share of the
// device time and the stream's idle time before each kind's calls.
func FormatProfile(rows []ProfileRow) string {
	var total float64
	for _, r := range rows {
		total += r.DeviceMS
	}
	var b strings.Builder
	var gaps float64
	fmt.Fprintf(&b, "%-18s %7s %11s %7s %10s %9s\n", "op", "calls", "device ms", "share", "host ms", "gap ms")
	for _, r := range rows {
		share := 0.0
		if total > 0 {
			share = 100 * r.DeviceMS / total
		}
		fmt.Fprintf(&b, "%-18s %7d %11.3f %6.1f%% %10.3f %9.3f\n", r.Op, r.Calls, r.DeviceMS, share, r.HostMS, r.GapMS)
		gaps += r.GapMS
	}
	fmt.Fprintf(&b, "%-18s %7s %11.3f %7s %10s %9.3f\n", "total", "", total, "", "", gaps)
	return b.String()
}
