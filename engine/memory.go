package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// ErrMemory is returned by a load whose weights would not fit in the memory
// available to the ranks; the message gives the estimate per rank.
var ErrMemory = errors.New("not enough memory")

// EstimateWeights returns the bytes of weights each of world ranks will hold
// once tree t is loaded from src with weights converted to dt (Invalid: kept
// as stored, except that fp8 and f64 weights become float32, as the loader
// does). It reads only tensor headers (src.Meta); a parameter the source does
// not list under its tree name, a wrapper's language_model. name or as
// packed int4 (a fused layout) is counted at the dtype of the first
// parameter it does list.
func EstimateWeights(t *model.Tree, world int, src model.WeightSource, dt tensor.DType) []int64 {
	params := t.Params()
	// A multimodal wrapper (Kimi-K2.5) stores the text model under
	// "language_model."; a compressed-tensors int4 weight is stored as
	// <module>.weight_packed, which the CPU backend dequantizes to float32
	// (or --dtype) and the CUDA backend keeps at 0.5625 byte per parameter,
	// counted here as dequantized.
	meta := func(n string) (tensor.DType, bool) {
		for _, c := range []string{n, "language_model." + n} {
			if d, _, ok := src.Meta(c); ok {
				return d, true
			}
			if mod, ok := strings.CutSuffix(c, ".weight"); ok {
				if _, _, ok := src.Meta(mod + ".weight_packed"); ok {
					return tensor.F32, true
				}
			}
		}
		return tensor.Invalid, false
	}
	fallback := tensor.F32
	for _, p := range params {
		if d, ok := meta(p.Name); ok {
			fallback = d
			break
		}
	}
	out := make([]int64, world)
	for _, p := range params {
		size := dt
		if size == tensor.Invalid {
			size = fallback
			if d, ok := meta(p.Name); ok {
				size = d
			}
			if size == tensor.F8E4M3 || size == tensor.F64 || !size.IsFloat() {
				size = tensor.F32
			}
		}
		for r := range world {
			out[r] += int64(tensor.Numel(p.RankShape(r))) * int64(size.Size())
		}
	}
	return out
}

// availableMemory returns the bytes the ranks of opts.Device can hold
// weights in: opts.MemoryLimit when set, else for the CPU backend (whose
// virtual ranks share the host) MemAvailable from /proc/meminfo. ok is false
// when it cannot tell (no /proc, or a CUDA device, whose free memory the
// backend does not report yet).
func availableMemory(opts Options) (bytes int64, ok bool) {
	if opts.MemoryLimit > 0 {
		return opts.MemoryLimit, true
	}
	if opts.Device != "" && opts.Device != "cpu" {
		return 0, false
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// checkMemory returns an error wrapping ErrMemory when the estimate does not
// fit in what is available (summed over ranks on the CPU, where the virtual
// ranks share the host; per rank on a GPU).
func checkMemory(perRank []int64, opts Options) error {
	avail, ok := availableMemory(opts)
	if !ok {
		return nil
	}
	var total, most int64
	for _, b := range perRank {
		total += b
		most = max(most, b)
	}
	need, what := total, fmt.Sprintf("%s in all for %d ranks sharing the host", FormatBytes(total), len(perRank))
	if opts.Device != "" && opts.Device != "cpu" {
		need, what = most, FormatBytes(most)+" on the largest rank"
	}
	if need <= avail {
		return nil
	}
	per := make([]string, len(perRank))
	for r, b := range perRank {
		per[r] = fmt.Sprintf("rank %d %s", r, FormatBytes(b))
	}
	return fmt.Errorf("%w: the weights need %s: %s, but %s is available; load fewer decoder layers with --load-layers A-B or use more devices",
		ErrMemory, strings.Join(per, ", "), what, FormatBytes(avail))
}

// FormatBytes renders a byte count in binary units: "1.5 GiB", "312 MiB",
// "900 B".
func FormatBytes(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.0f MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.0f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}
