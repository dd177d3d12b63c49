package model

import (
	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// RawHoster is a device that copies rows [r0, r1) of a tensor to the host
// in the tensor's own dtype ([r1-r0, cols]; a bf16 activation stays bf16),
// sparing ToHost's conversion to float32. The CUDA backend has it;
// inspect/capture, which may not import backends, uses it through this
// interface when a rank's Device has it.
type RawHoster interface {
	ToHostRaw(t backend.Tensor, r0, r1 int) *tensor.Tensor
}
