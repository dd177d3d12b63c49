package capture

import (
	"fmt"
	"strings"

	"hsdb/inspect/plural"
)

// A dump is one run's numerics: resuming a batch job's staging directory,
// or verifying its finished dump, under another tensor-parallel size,
// device kind, --dtype or --ep is refused (otherNumerics).
//
// The decision: the gathered hidden states of a sequence are the same
// tensor at any tp only up to rounding. Each row-parallel linear
// (o_proj, down_proj; the routed experts) sums its ranks' partial products
// in an all-reduce, and the split and the order of those sums change with
// tp (and with --ep, which places experts whole), so in bf16 the values
// differ in their last bits; the CPU and the GPU backends round
// differently again, and --dtype rounds the weights themselves. Mixed, a
// dump's files would come from two numerics while its manifest names one
// world_size, device and weight dtype, and its replica checks (max |Δ|
// between ranks, per rank index) would merge ranks of two worlds: what
// check and a trainer read about the data would be false for part of it.
// So the resume is refused, saying why and how to go on; the data already
// captured stays, for a rerun with its settings.

// numericsDiff is how two manifests' models differ in a setting that
// changes the numerics of a pass: the setting ("--tp"), its value then and
// now as flags ("--tp 8", "--tp 4"; "without --ep"), how to rerun with the
// old one ("with --tp 8", "without --ep"), and what differs in the
// numbers.
type numericsDiff struct {
	setting, was, now, rerun, why string
}

// numericsOf compares a (the manifest found) with b (this run's) in the
// settings that change a pass's numerics, in this order: world size,
// device kind (deviceKind: another GPU of the same kind computes the
// same; a manifest without a device, from an older hsdb, is not compared),
// the weights' load dtype (--dtype), expert parallelism (--ep) and fp8
// activations (--w8a8). Nil
// when they agree.
func numericsOf(a, b ModelInfo) *numericsDiff {
	flag := func(name, v string) string {
		if v == "" {
			return "without " + name
		}
		return name + " " + FileText(v)
	}
	var d numericsDiff
	switch {
	case a.WorldSize != b.WorldSize:
		d = numericsDiff{setting: "--tp", was: fmt.Sprintf("--tp %d", a.WorldSize), now: fmt.Sprintf("--tp %d", b.WorldSize),
			why: "tp changes how the all-reduced sums of o_proj and down_proj are split and ordered, and bf16 rounds each"}
	case a.Device != "" && b.Device != "" && deviceKind(a.Device) != deviceKind(b.Device):
		d = numericsDiff{setting: "--device", was: "--device " + FileText(deviceKind(a.Device)), now: "--device " + FileText(deviceKind(b.Device)),
			why: "each backend's kernels sum and round their own way"}
	case a.WeightDType != b.WeightDType:
		d = numericsDiff{setting: "--dtype", was: flag("--dtype", a.WeightDType), now: flag("--dtype", b.WeightDType),
			why: "--dtype rounds the weights on load"}
	case a.ExpertParallel != b.ExpertParallel:
		ep := map[bool]string{true: "--ep", false: "without --ep"}
		d = numericsDiff{setting: "--ep", was: ep[a.ExpertParallel], now: ep[b.ExpertParallel],
			why: "--ep sums the routed experts' outputs over other ranks, in another order"}
	case a.W8A8 != b.W8A8:
		w := map[bool]string{true: "--w8a8", false: "without --w8a8"}
		d = numericsDiff{setting: "--w8a8", was: w[a.W8A8], now: w[b.W8A8],
			why: "--w8a8 rounds every fp8 linear's input to fp8"}
	default:
		return nil
	}
	d.rerun = "with " + d.was
	if strings.HasPrefix(d.was, "without ") {
		d.rerun = d.was
	}
	return &d
}

// deviceKind is a manifest's device without its index or stage: "cuda"
// for "cuda:3" or "cuda:0/rank1", "cpu" for "cpu:1 (stage 1)".
func deviceKind(d string) string {
	if i := strings.IndexAny(d, ":/ "); i >= 0 {
		return d[:i]
	}
	return d
}

// otherNumerics returns the setting and the message that refuse old, a
// staging directory (finished false) or a finished dump of the same job
// whose numerics differ from m's (numericsOf): what old holds (n validated
// sequences) and at what, why they are not mixed, and how to go on: rerun
// with old's setting (to resume it, or to have it verified), --force (to
// start over, or replace it), or another --out. Empty when the numerics
// agree.
func otherNumerics(old, m *Manifest, n int, finished bool) (setting, msg string) {
	d := numericsOf(old.Model, m.Model)
	if d == nil {
		return "", ""
	}
	goOn, redo := "resume it", "start over "+at(d.now)+" (capturing those again)"
	if finished {
		goOn, redo = "have it verified", "replace it with a capture "+at(d.now)
	}
	return d.setting, fmt.Sprintf("it holds %s captured %s; this run is %s. hsdb does not mix them in one dump: "+
		"a sequence's hidden states differ between the two (%s), "+
		"and the manifest's world_size, device, weight dtype and replica checks must hold for every file. "+
		"Rerun %s to %s, give --force to %s, or choose another --out",
		plural.N(n, "validated sequence"), at(d.was), at(d.now), d.why, d.rerun, goOn, redo)
}

// at words a setting after "captured" or "start over": "at --tp 8",
// "without --ep", "with --ep" (a flag without a value).
func at(s string) string {
	if strings.HasPrefix(s, "without ") {
		return s
	}
	if !strings.Contains(s, " ") {
		return "with " + s
	}
	return "at " + s
}
