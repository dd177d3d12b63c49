package quant

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// fetch returns a checkpoint tensor to a scheme's checks: src.Tensor for a
// load, or headerOnly's data-less tensor for a plan (QuantScheme.Check).
type fetch func(name string) (*tensor.Tensor, error)

// headerOnly returns a fetch that gives tensor name's dtype and shape from
// src's header and no data (Data nil): enough for tensor.Quantized.Check,
// which compares dtypes and shapes, and read by nothing that needs values.
func headerOnly(src model.WeightSource) fetch {
	return func(name string) (*tensor.Tensor, error) {
		dt, shape, ok := src.Meta(name)
		if !ok {
			return nil, fmt.Errorf("tensor %s is missing from the checkpoint", name)
		}
		return &tensor.Tensor{DType: dt, Shape: shape}, nil
	}
}
