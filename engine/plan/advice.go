package plan

import (
	"fmt"

	"hsdb/engine/tensor"
)

// FitAdvice ends an ErrMemory refusal of ranks with a device each (GPUs):
// what a user can change so the model fits. A caller planning pipeline
// stages, where --load-layers does not apply, replaces it (cmd/hsdb plan
// --pp).
const FitAdvice = "load fewer decoder layers with --load-layers A-B or use more devices"

// HostFitAdvice ends an ErrMemory refusal of ranks that share one host's
// memory (Plan.Shared: the CPU backend's ranks), where more ranks add no
// memory and "more devices" means nothing: fewer layers, a machine with
// more memory, or the ranks on hosts of their own.
const HostFitAdvice = "load fewer decoder layers with --load-layers A-B or use a machine with more memory (the ranks share this host's: more ranks on it add none; ranks on hosts of their own, hsdb --listen, need only their own)"

// Advice is what ends p's ErrMemory refusal: FitAdvice for ranks with a
// device each, HostFitAdvice and DequantAdvice for ranks sharing a host.
func (p *Plan) Advice() string {
	if !p.Shared {
		return FitAdvice
	}
	return HostFitAdvice + p.DequantAdvice()
}

// DequantAdvice says, for a plan whose quantized weights are dequantized
// on load (the CPU backend: Options.Dequantize), what that costs and what
// changes it: "; the CPU backend dequantizes the quantized weights (fp8
// e4m3, 128×128 blocks) on load to f32, 4 bytes a parameter: --dtype bf16
// keeps them in 2, and GPUs (--device cuda) keep them as stored". "" when
// nothing is dequantized.
func (p *Plan) DequantAdvice() string {
	if p.dequant == tensor.Invalid {
		return ""
	}
	hint := ""
	if p.dequant == tensor.F32 {
		hint = ": --dtype bf16 keeps them in 2, and"
	} else {
		hint = ";"
	}
	return fmt.Sprintf("; the CPU backend dequantizes the quantized weights (%s) on load to %s, %d bytes a parameter%s GPUs (--device cuda) keep them as stored",
		p.scheme, p.dequant, p.dequant.Size(), hint)
}
