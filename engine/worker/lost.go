package worker

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// contextLost reports whether err left this worker's device unusable (a
// CUDA error after which the process must be restarted: an illegal
// address, a kernel trap); set by the cuda build (device_cuda.go).
var contextLost func(err error) bool

// exitContextLost is the exit status of a worker whose device context was
// lost: it writes the error to stderr (which the front keeps as its last
// words) and ends, so that the session's next `run` starts a fresh worker.
const exitContextLost = 3

// endIfContextLost ends the worker when err lost its device's context.
func (s *server) endIfContextLost(err error) {
	if err == nil || contextLost == nil || !contextLost(err) {
		return
	}
	fmt.Fprintf(os.Stderr, "hsdb worker rank %d: the device's context is lost, ending this worker: %v%s\n", s.rank, err, s.gate.where())
	if s.c != nil {
		s.c.close()
	}
	os.Exit(exitContextLost)
}

// KernelFaultEnv, a test-only setting "SITE" or "SITE@RANK", names a site
// at which a CUDA worker (of every rank, or of RANK) launches a kernel that
// writes to an unmapped device address and waits for it (the driver
// reports CUDA_ERROR_ILLEGAL_ADDRESS): how the GPU tests check that a
// kernel fault ends that worker and not the session. With KernelFaultOnceEnv naming a
// file, only a worker that creates the file faults, so the fresh worker
// the next `run` starts computes normally.
const (
	KernelFaultEnv     = "HSDB_TEST_KERNEL_FAULT"
	KernelFaultOnceEnv = "HSDB_TEST_KERNEL_FAULT_ONCE"
)

// kernelFaultSite returns the site at which this worker is to inject the
// kernel fault (KernelFaultEnv), or "".
func (s *server) kernelFaultSite() string {
	v := os.Getenv(KernelFaultEnv)
	if v == "" || injectKernelFault == nil {
		return ""
	}
	site, rank, ok := strings.Cut(v, "@")
	if ok && rank != strconv.Itoa(s.rank) {
		return ""
	}
	if once := os.Getenv(KernelFaultOnceEnv); once != "" {
		f, err := os.OpenFile(once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return ""
		}
		f.Close()
	}
	return site
}

// injectKernelFault runs the faulting launch on dev and returns the
// driver's error; set by the cuda build.
var injectKernelFault func(dev backend.Device) error

// kernelFault is the hook of a step with KernelFaultEnv set: at the named
// site (the first time) it asks the front's hook, then queues the
// faulting kernel.
type kernelFault struct {
	inner model.Hook // nil: the step was not hooked
	site  string
	dev   backend.Device
	done  bool
}

func (k *kernelFault) Want(ev *model.Event) bool {
	want := k.inner != nil && k.inner.Want(ev) // the front learns the site first
	if !k.done && ev.Site.Path == k.site {
		k.done = true
		if err := injectKernelFault(k.dev); err != nil {
			panic(&backend.DeviceError{Device: k.dev.Name(), Op: "injected kernel fault", Err: err})
		}
	}
	return want
}

func (k *kernelFault) Visit(ev *model.Event, views []*model.RankView) error {
	return k.inner.Visit(ev, views)
}
