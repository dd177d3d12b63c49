package engine

import (
	"strings"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/quant"
	"hsdb/engine/tensor"
)

// TestW8A8Refused: --w8a8 is refused, before any weight is read, where it
// cannot apply: on the CPU backend (it dequantizes fp8 weights on load)
// and for a checkpoint without block-scaled fp8 weights; each message
// says why.
func TestW8A8Refused(t *testing.T) {
	for _, c := range []struct{ dir, want string }{
		{"../testdata/hf/deepseek_v3_fp8", "runs on cpu"},
		{"../testdata/hf/llama", "no quantization_config"},
	} {
		e, err := Open(c.dir, Options{TP: 2, W8A8: true})
		if err == nil {
			e.Close()
			t.Errorf("%s: --w8a8 loaded", c.dir)
			continue
		}
		if !strings.Contains(err.Error(), "--w8a8") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a --w8a8 error saying %q", c.dir, err, c.want)
		}
	}
}

// w8a8Fake is a CPU device that claims to run W8A8 (the CUDA backend's
// SetW8A8), to reach setW8A8's refusal of f32 activations.
type w8a8Fake struct {
	backend.Device
	on bool
}

func (f *w8a8Fake) SetW8A8(on bool) error {
	f.on = on
	return nil
}

// TestSetW8A8Refusals: activations other than bf16 are refused saying how
// to get bf16, naming the rank the device runs (a worker's rank, not its
// index), and nothing is set; without --w8a8 nothing is asked.
func TestSetW8A8Refusals(t *testing.T) {
	qs := &quant.FP8Block{Block: [2]int{128, 128}}
	f := &w8a8Fake{Device: cpu.New(-1)}
	for _, c := range []struct {
		dt   tensor.DType
		want string
	}{{tensor.Invalid, "computes in f32; the block-scaled fp8 GEMM takes bf16 activations (load with --dtype bf16)"}, {tensor.F16, "--dtype f16 gives f32 activations; use --dtype bf16"}} {
		err := setW8A8(Options{W8A8: true, DType: c.dt}, qs, []backend.Device{f}, []int{3})
		if err == nil || !strings.Contains(err.Error(), "rank 3") || !strings.Contains(err.Error(), c.want) || f.on {
			t.Errorf("--dtype %s: %v (set %v); want rank 3 and %q", c.dt, err, f.on, c.want)
		}
	}
	if err := setW8A8(Options{}, nil, []backend.Device{f}, []int{3}); err != nil || f.on {
		t.Errorf("without --w8a8: %v, set %v", err, f.on)
	}
}
