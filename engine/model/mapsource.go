package model

import (
	"fmt"

	"hsdb/engine/tensor"
)

// MapSource is an in-memory WeightSource (converted llama2.c checkpoints,
// tests). Name is used in error messages.
type MapSource struct {
	Name    string
	Tensors map[string]*tensor.Tensor
}

// Meta returns the named tensor's dtype and shape.
func (m *MapSource) Meta(name string) (tensor.DType, []int, bool) {
	t, ok := m.Tensors[name]
	if !ok {
		return tensor.Invalid, nil, false
	}
	return t.DType, t.Shape, true
}

// Tensor returns the named tensor.
func (m *MapSource) Tensor(name string) (*tensor.Tensor, error) {
	t, ok := m.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %s", m.Name, name)
	}
	return t, nil
}
