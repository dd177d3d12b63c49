package worker

import (
	"fmt"
	"os"
	"time"
)

// TraceEnv set to 1 makes workers and the front write one line per step
// to stderr with where the step's time went (the worker: computing the
// step and sending its reply; the front: from sending the step to its
// end, and decoding the reply): how the cost of the process boundary is
// measured (TestCUDAWorkersPrefill8B).
const TraceEnv = "HSDB_WORKER_TRACE"

var traceOn = os.Getenv(TraceEnv) == "1"

// trace writes one trace line to stderr when TraceEnv is set.
func trace(format string, args ...any) {
	if traceOn {
		fmt.Fprintf(os.Stderr, "trace: "+format+"\n", args...)
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }
