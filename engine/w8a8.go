package engine

import (
	"fmt"

	"hsdb/engine/backend"
	"hsdb/engine/model"
	"hsdb/engine/quant"
	"hsdb/engine/tensor"
)

// w8a8Device is a device that can run block-scaled fp8 linears on fp8
// activations (the CUDA backend; Options.W8A8).
type w8a8Device interface{ SetW8A8(on bool) error }

// setW8A8 applies Options.W8A8 to the ranks' devices. It refuses, naming
// the reason, a checkpoint without block-scaled fp8 weights, a device
// that cannot (the CPU backend dequantizes fp8 weights on load) and
// activations other than bf16 (cuBLASLt's block-scaled GEMM writes bf16).
// ranks[i] is the rank devs[i] runs.
func setW8A8(opts Options, qs model.QuantScheme, devs []backend.Device, ranks []int) error {
	if !opts.W8A8 {
		return nil
	}
	if err := w8a8Quant(qs); err != nil {
		return err
	}
	for i, d := range devs {
		r := ranks[i]
		w, ok := d.(w8a8Device)
		if !ok {
			return fmt.Errorf("--w8a8: rank %d runs on %s, which dequantizes fp8 weights on load; it needs --device cuda", r, d.Name())
		}
		if a := d.ActDType(); a != tensor.BF16 {
			how := "load with --dtype bf16"
			if opts.DType != tensor.Invalid {
				how = fmt.Sprintf("--dtype %s gives %s activations; use --dtype bf16", opts.DType, a)
			}
			return fmt.Errorf("--w8a8: rank %d computes in %s; the block-scaled fp8 GEMM takes bf16 activations (%s)", r, a, how)
		}
		if err := w.SetW8A8(true); err != nil {
			return fmt.Errorf("--w8a8: rank %d: %w", r, err)
		}
	}
	return nil
}

// w8a8Quant refuses --w8a8 on a checkpoint whose quantization scheme qs
// is not block-scaled fp8 (nil: a dense checkpoint), naming the scheme it
// has: the load's refusal and CheckFit's, in the same words.
func w8a8Quant(qs model.QuantScheme) error {
	if _, ok := qs.(*quant.FP8Block); ok {
		return nil
	}
	what := "no quantization_config"
	if qs != nil {
		what = "quantization_config " + qs.String()
	}
	return fmt.Errorf("--w8a8: the checkpoint has %s; it applies to block-scaled fp8 weights (quant_method \"fp8\", weight_block_size): leave --w8a8 out", what)
}

// w8a8Act refuses --w8a8 when the activations a GPU load computes in,
// act (plan.ActivationDType of --dtype and config.json's dtype), are not
// bf16: cuBLASLt's block-scaled fp8 GEMM writes bf16. dtype is --dtype
// (tensor.Invalid: not given).
func w8a8Act(act, dtype tensor.DType) error {
	if act == tensor.BF16 {
		return nil
	}
	how := fmt.Sprintf("config.json's dtype gives %s activations; add --dtype bf16", act)
	if dtype != tensor.Invalid {
		how = fmt.Sprintf("--dtype %s gives %s activations; use --dtype bf16", dtype, act)
	}
	return fmt.Errorf("--w8a8: the block-scaled fp8 GEMM takes bf16 activations (%s)", how)
}
