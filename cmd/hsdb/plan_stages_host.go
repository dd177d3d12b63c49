package main

import (
	"fmt"
	"math"

	"hsdb/engine/bytesize"
)

// stagesOnHost judges a --device cpu plan of several pipeline stages,
// whose ranks share the host (Plan.Shared): hsdb --workers starts every
// stage's workers on this host, so all of them together must fit
// --device-memory, not each stage alone (each stage's "fits" compared its
// own ranks with the whole host: 2 stages of 37 MiB each "fit" 50 MiB).
// It returns the bytes all workers need, the line that says so, and
// whether they fit; 0, "" and true for one stage, a GPU plan (a device per
// rank) or an unknown device memory.
func stagesOnHost(stages []stagePlan) (int64, string, bool) {
	if len(stages) < 2 || !stages[0].Plan.Shared || stages[0].Plan.DeviceBytes <= 0 {
		return 0, "", true
	}
	avail := stages[0].Plan.DeviceBytes
	var need int64
	workers := 0
	for _, st := range stages {
		for _, r := range st.Plan.Ranks {
			need = min(need, math.MaxInt64-r.Total) + r.Total // saturates
			workers++
		}
	}
	who := fmt.Sprintf("all stages: the %d workers of %d stages sharing the host (hsdb --workers starts them all on it)", workers, len(stages))
	if need <= avail {
		return need, fmt.Sprintf("%s need %s in all, within %s (%s left)", who, bytesize.Binary(need), bytesize.Binary(avail), bytesize.Binary(avail-need)), true
	}
	return need, fmt.Sprintf("fits: no, %s need %s in all but %s is available: %s short (stages on hosts of their own, --listen, need only each stage's); more stages or ranks on this host do not help: plan fewer tokens (--max-tokens, --seqs, --seq-len) or a smaller --dtype, or give a host with more memory",
		who, bytesize.Binary(need), bytesize.Binary(avail), bytesize.Binary(need-avail)), false
}
